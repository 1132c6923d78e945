/**
 * `npm run build`: the server and the CLI compiled to JavaScript run on plain node (no
 * TypeScript loader), find their migrations, serve /healthz and the field app (dist/app), and
 * stop on SIGTERM.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { promisify } from 'node:util';
import { childEnv, killAllServers, repoRoot, spawnServer } from '../helpers/processes.ts';
import { TEST_NODE_FLAGS } from '../helpers/node-flags.ts';

const run = promisify(execFile);
// Inside the checkout, so the external packages resolve from its node_modules.
const outDir = path.join(repoRoot, 'node_modules', '.cache', `fieldchart-build-${process.pid}`);
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'fieldchart-build-'));

after(async () => {
  await killAllServers();
  fs.rmSync(outDir, { recursive: true, force: true });
  fs.rmSync(dataDir, { recursive: true, force: true });
});

test('the built server and CLI run on plain node', async () => {
  await run(process.execPath, ['--import', 'tsx', path.join(repoRoot, 'scripts/build.ts'), '--outdir', outDir], { cwd: repoRoot });
  const serverEntry = path.join(outDir, 'server/main.js');
  const cliEntry = path.join(outDir, 'cli/main.js');
  assert.ok(fs.existsSync(path.join(outDir, 'migrations/meta/_journal.json')));
  const sources = fs.readdirSync(outDir, { recursive: true }).map(String);
  assert.deepEqual(sources.filter((f) => f.endsWith('.ts')), [], 'no TypeScript in the build');

  const server = spawnServer({ FIELDCHART_DATA_DIR: dataDir, WORKER_ENABLED: 'false' }, { entry: serverEntry });
  const url = await server.url(120_000);
  const health = await fetch(`${url}/healthz`);
  assert.equal(health.status, 200);
  assert.deepEqual(await health.json(), { status: true, checks: { process: 'ok' } });
  assert.equal(health.headers.get('cache-control'), 'no-store');
  const ready = await fetch(`${url}/readyz`);
  assert.equal(ready.status, 200);
  await ready.arrayBuffer();
  // The field app, found beside the server bundle: the page revalidated, its bundle immutable.
  const redirect = await fetch(`${url}/app`, { redirect: 'manual' });
  assert.equal(redirect.status, 301);
  assert.equal(redirect.headers.get('location'), '/app/');
  const page = await fetch(`${url}/app/`);
  assert.equal(page.status, 200);
  assert.equal(page.headers.get('cache-control'), 'no-cache');
  assert.match(page.headers.get('content-security-policy') ?? '', /script-src 'self' 'wasm-unsafe-eval'/);
  const script = /src="(app-[0-9a-f]{12}\.js)"/.exec(await page.text())?.[1];
  assert.ok(script, 'the page names its bundle');
  const bundle = await fetch(`${url}/app/${script}`, { headers: { 'accept-encoding': 'gzip' } });
  assert.equal(bundle.status, 200);
  assert.equal(bundle.headers.get('cache-control'), 'public, max-age=31536000, immutable');
  assert.equal(bundle.headers.get('content-encoding'), 'gzip');
  await bundle.arrayBuffer();
  const unknown = await fetch(`${url}/app/nothing-here.js`);
  assert.equal(unknown.status, 404);
  assert.equal(unknown.headers.get('cache-control'), 'no-store');
  await unknown.arrayBuffer();
  // No loader in the process: `node <entry>` with the tests' V8 flags and nothing else.
  assert.deepEqual(server.child.spawnargs.slice(1), [...TEST_NODE_FLAGS, serverEntry]);

  // The built CLI reaches the running server through its admin socket.
  const env = childEnv({ FIELDCHART_DATA_DIR: dataDir });
  const verify = await run(process.execPath, [cliEntry, '--json', '--verbose', 'audit', 'verify'], { cwd: repoRoot, env });
  assert.equal(JSON.parse(verify.stdout).ok, true);
  assert.match(verify.stderr, /admin socket/i);
  const version = await run(process.execPath, [cliEntry, '--version'], { cwd: repoRoot, env });
  assert.equal(version.stdout.trim(), JSON.parse(fs.readFileSync(path.join(repoRoot, 'package.json'), 'utf8')).version);

  const exit = await server.stop('SIGTERM');
  assert.equal(exit.code, 0, server.stderr());
});
