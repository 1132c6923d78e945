/** The browser builds of the tests: the stub of PGlite's `node:` loads lives with the app's build (scripts/). */
import { build, type BuildResult } from 'esbuild';
import { PGLITE, pgliteNodeOnly } from '../../scripts/pglite-browser-stub.ts';

export { PGLITE, pgliteNodeOnly };

/**
 * An in-memory esbuild browser build of `entry` with nothing left external, as an app's
 * bundler would make it (PGlite's `node:` loads stubbed): the bundle tests' one recipe.
 */
export function browserBuild(absWorkingDir: string, entry: string, outdir?: string): Promise<BuildResult<{ write: false; metafile: true }>> {
  return build({
    absWorkingDir,
    entryPoints: [entry],
    ...(outdir ? { outdir } : {}),
    platform: 'browser',
    format: 'esm',
    bundle: true,
    write: false,
    metafile: true,
    logLevel: 'silent',
    // Nothing may be left for the host to resolve.
    external: [],
    plugins: [pgliteNodeOnly],
  });
}
