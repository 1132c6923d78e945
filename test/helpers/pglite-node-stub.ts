/**
 * PGlite's Emscripten glue loads `node:*` modules only when it runs under Node
 * (`ENVIRONMENT_IS_NODE`); its package.json `browser` field disables the bare names (`fs`,
 * `module`…) but cannot name the `node:` ones, which every browser bundler must stub the same
 * way (Vite does it by itself). The stub applies to PGlite's files only: a `node:` import
 * anywhere else still fails an esbuild browser build.
 */
import { build, type BuildResult, type Plugin } from 'esbuild';

/** How PGlite's files appear in esbuild's paths (metafile inputs, bundle section headers). */
export const PGLITE = 'node_modules/@electric-sql/pglite/';

export const pgliteNodeOnly: Plugin = {
  name: 'pglite-node-only',
  setup(b) {
    b.onResolve({ filter: /^node:/ }, (args) => (args.importer.includes(PGLITE) ? { path: args.path, namespace: 'pglite-node-only' } : undefined));
    b.onLoad({ filter: /.*/, namespace: 'pglite-node-only' }, () => ({ contents: 'export {}' }));
  },
};

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
