/**
 * PGlite's Emscripten glue loads `node:*` modules only when it runs under Node
 * (`ENVIRONMENT_IS_NODE`); its package.json `browser` field disables the bare names (`fs`,
 * `module`…) but cannot name the `node:` ones, which every browser bundler must stub the same
 * way (Vite does it by itself). The stub applies to PGlite's files only: a `node:` import
 * anywhere else still fails an esbuild browser build. Used by the field app's build and the
 * browser tests.
 */
import type { Plugin } from 'esbuild';

/** How PGlite's files appear in esbuild's paths (metafile inputs, bundle section headers). */
export const PGLITE = 'node_modules/@electric-sql/pglite/';

export const pgliteNodeOnly: Plugin = {
  name: 'pglite-node-only',
  setup(b) {
    b.onResolve({ filter: /^node:/ }, (args) => (args.importer.includes(PGLITE) ? { path: args.path, namespace: 'pglite-node-only' } : undefined));
    b.onLoad({ filter: /.*/, namespace: 'pglite-node-only' }, () => ({ contents: 'export {}' }));
  },
};
