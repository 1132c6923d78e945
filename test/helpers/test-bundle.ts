/**
 * The run's test files as JavaScript, bundled once by esbuild (test/run.ts), so that a test
 * file's process loads plain modules instead of registering tsx. Registering tsx cost a test
 * process about 0.37 s of CPU before its first import, and importing the test server through it
 * about 0.6 s more than the bundle (1.0 s against 0.4 s, this machine), for each of the run's
 * ~180 processes on CI's two cores.
 *
 * Each module's `import.meta.url`, `dirname` and `filename` are its source's, so that what a module
 * finds beside itself (migrations, fixtures, PGlite's thread sources, a stand-in it spawns) it
 * finds where it did under tsx. Linked source maps and `--enable-source-maps` point stacks and
 * the reporter's `test at` lines at the TypeScript. npm packages stay external and load from
 * node_modules, as under tsx; our workspaces (`@fieldchart/*`) are bundled as sources. A file
 * run on its own (`node --import tsx --test <file>`) still runs through tsx.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { build, type Plugin } from 'esbuild';

/** Where `source`'s bundle lies under `outdir`. */
export function bundledPath(repoRoot: string, outdir: string, source: string): string {
  return path.join(outdir, path.relative(repoRoot, source)).replace(/\.ts$/, '.js');
}

/** The source a bundled test file came from, or the path as given if it is not one. */
export function sourceOfBundled(repoRoot: string, outdir: string, file: string): string {
  const relative = path.relative(outdir, file);
  return relative.startsWith('..') ? file : path.join(repoRoot, relative).replace(/\.js$/, '.ts');
}

/** What `import.meta.url`, `.dirname` and `.filename` become: names each module declares for itself. */
const META_NAMES = { url: '__sourceImportMetaUrl', dirname: '__sourceImportMetaDirname', filename: '__sourceImportMetaFilename' } as const;
const META_DEFINE = Object.fromEntries(Object.entries(META_NAMES).map(([key, name]) => [`import.meta.${key}`, name]));

/**
 * The module's text with its own source location declared first, under the names esbuild's
 * `define` puts for `import.meta.url`, `.dirname` and `.filename`: a syntactic replacement,
 * so the same words in a string or a comment stay as written. Bundling keeps each module's
 * top-level names apart, renaming where two collide.
 */
export function withSourceMeta(text: string, file: string): string {
  if (!text.includes('import.meta')) return text;
  const values = { url: pathToFileURL(file).href, dirname: path.dirname(file), filename: file };
  const declarations = Object.entries(META_NAMES).map(([key, name]) => `const ${name} = ${JSON.stringify(values[key as keyof typeof values])};`);
  // On the first line, so that the source's lines keep their numbers for the source map.
  return `${declarations.join(' ')} ${text}`;
}

const sourceMeta: Plugin = {
  name: 'source-import-meta',
  setup(b) {
    b.onLoad({ filter: /\.ts$/ }, async (args) => ({ contents: withSourceMeta(await fs.readFile(args.path, 'utf8'), args.path), loader: 'ts' }));
  },
};

/**
 * Bundles `entries` (absolute paths inside `repoRoot`) into `outdir`, each at `bundledPath`,
 * modules they share in chunks beside them.
 */
export async function bundleTests(repoRoot: string, entries: readonly string[], outdir: string): Promise<void> {
  const pkg = JSON.parse(await fs.readFile(path.join(repoRoot, 'package.json'), 'utf8')) as {
    dependencies: Record<string, string>;
    devDependencies: Record<string, string>;
  };
  await build({
    absWorkingDir: repoRoot,
    entryPoints: [...entries],
    outbase: repoRoot,
    outdir,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    sourcemap: 'linked',
    // Names as the sources spell them: bundling renames colliding top-level names, and error
    // classes and logs read `.name`.
    keepNames: true,
    // As scripts/build.ts does: the root's packages; the workspaces are not among them, so they bundle.
    external: [...Object.keys(pkg.dependencies), ...Object.keys(pkg.devDependencies)],
    define: META_DEFINE,
    plugins: [sourceMeta],
    logLevel: 'warning',
  });
}
