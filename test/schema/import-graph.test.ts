/**
 * The shape of the code base, checked on every run: no import circles between the modules of
 * schema/src, server/src, cli/src and client-lib/src, a workspace reached by another only
 * through its door (the entry points its package.json exports), and every package a workspace
 * imports declared in its own package.json at the root's exact version. The graph is dpdm's, built with
 * the TypeScript resolver of tsconfig.json; type-only imports and lazy `import()` count, since
 * both still tie two modules together (a circle of types is a circle in the design).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { parseCircular, parseDependencyTree, shortenTree } from 'dpdm';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

interface PackageJson {
  readonly name: string;
  readonly version?: string;
  readonly exports?: Record<string, string>;
  readonly dependencies?: Record<string, string>;
  readonly devDependencies?: Record<string, string>;
}

interface Workspace {
  readonly dir: string;
  readonly name: string;
  readonly doors: readonly string[];
  readonly dependencies: Readonly<Record<string, string>>;
}

const readPackage = (dir: string) => JSON.parse(fs.readFileSync(path.join(root, dir, 'package.json'), 'utf8')) as PackageJson;

/** Each workspace and the files its package.json `exports` name: the only ones others may import. */
const workspaces: Workspace[] = ['schema', 'server', 'cli', 'client-lib'].map((dir) => {
  const pkg = readPackage(dir);
  const doors = Object.values(pkg.exports ?? {}).map((file) => path.posix.join(dir, file));
  return { dir, name: pkg.name, doors, dependencies: pkg.dependencies ?? {} };
});

/** Circles that may stand for now, each as its two edges (a → b, b → a). None today. */
const allowedCircles: ReadonlyArray<readonly [string, string]> = [];

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

const graph = parseDependencyTree(
  [...workspaces.map((w) => `${w.dir}/src/**/*.ts`), 'cli/bin/*.js'],
  { cwd: root, context: root, tsconfig: path.join(root, 'tsconfig.json'), transform: false, skipDynamicImports: false },
).then((tree) => shortenTree(root, tree));

const describeCircle = (circle: readonly string[]) => [...circle, circle[0]].join(' -> ');

test('the graph covers every workspace source file', async () => {
  const tree = await graph;
  for (const w of workspaces) {
    const files = (fs.readdirSync(path.join(root, w.dir, 'src'), { recursive: true }) as string[]).filter((f) => f.endsWith('.ts'));
    for (const f of files) assert.ok(path.posix.join(w.dir, 'src', f.split(path.sep).join('/')) in tree, `${w.dir}/src/${f} missing from the graph`);
  }
});

test('no import circles, except the allow-listed ones', async () => {
  const tree = await graph;
  // A circle found with one edge of an allowed pair skipped, and again with the other skipped,
  // must use neither of them: every circle except the allowed pair itself shows up.
  const found = new Map<string, readonly string[]>();
  const runs: ReadonlyArray<ReadonlyArray<readonly [string, string]>> =
    allowedCircles.length === 0 ? [[]] : [allowedCircles.map(([a, b]) => [a, b] as const), allowedCircles.map(([a, b]) => [b, a] as const)];
  for (const skipped of runs) {
    for (const circle of parseCircular(tree, false, skipped.map(([a, b]) => [escape(a), escape(b)] as const))) {
      found.set([...circle].sort().join('|'), circle);
    }
  }
  assert.deepEqual([...found.values()].map(describeCircle), [], 'import circles (cut them: move the shared types into a small module both import)');
});

test('every allow-listed circle still exists (else remove it from the list)', async () => {
  const tree = await graph;
  const imports = (from: string, to: string) => (tree[from] ?? []).some((d) => d.id === to);
  for (const [a, b] of allowedCircles) {
    assert.ok(imports(a, b) && imports(b, a), `${a} <-> ${b} is no longer a circle: remove it from allowedCircles`);
  }
});

test('a workspace imports another only through its door', async () => {
  const tree = await graph;
  const owner = (file: string) => workspaces.find((w) => file.startsWith(`${w.dir}/`));
  const breaches: string[] = [];
  for (const [file, deps] of Object.entries(tree)) {
    const from = owner(file);
    if (!from || !deps) continue;
    for (const dep of deps) {
      const to = dep.id ? owner(dep.id) : undefined;
      if (!to || to === from || !dep.id) continue;
      if (!to.doors.includes(dep.id)) breaches.push(`${file} imports ${dep.id} (use ${to.name})`);
      else if (!dep.request.startsWith(to.name)) breaches.push(`${file} reaches ${to.name} by a path (${dep.request})`);
    }
  }
  assert.deepEqual(breaches, []);
});

test('the client library and the schema import no server code', async () => {
  const tree = await graph;
  const breaches = Object.entries(tree)
    .filter(([file]) => file.startsWith('client-lib/') || file.startsWith('schema/'))
    .flatMap(([file, deps]) => (deps ?? []).filter((d) => d.id?.startsWith('server/') || d.id?.startsWith('cli/')).map((d) => `${file} imports ${d.id}`));
  assert.deepEqual(breaches, []);
});

test('every package a workspace imports is declared in its package.json, at the root\'s version', async () => {
  const tree = await graph;
  const rootPkg = readPackage('.');
  const rootVersions: Record<string, string> = { ...rootPkg.dependencies, ...rootPkg.devDependencies };
  const problems = new Set<string>();
  for (const [file, deps] of Object.entries(tree)) {
    const w = workspaces.find((x) => file.startsWith(`${x.dir}/`));
    if (!w || !deps) continue;
    for (const { request } of deps) {
      // Relative paths, node: built-ins and the package's own `#imports` are not packages.
      if (/^[.#/]/.test(request) || request.startsWith('node:')) continue;
      const name = request.split('/').slice(0, request.startsWith('@') ? 2 : 1).join('/');
      if (name === w.name) continue;
      if (!(name in w.dependencies)) problems.add(`${w.dir}/package.json does not declare ${name}`);
    }
  }
  for (const w of workspaces) {
    for (const [name, version] of Object.entries(w.dependencies)) {
      const sibling = workspaces.find((x) => x.name === name);
      const expected = sibling ? readPackage(sibling.dir).version : rootVersions[name];
      if (version !== expected) problems.add(`${w.dir}/package.json has ${name}@${version}, the root ${expected ?? 'nothing'}`);
    }
  }
  assert.deepEqual([...problems], []);
});
