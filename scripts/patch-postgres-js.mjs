// Applies a two-part fix to postgres.js 3.4.9 (porsager/postgres#1208, #1154, PR #1209), run
// by `npm ci`/`npm install` (postinstall) so every install — tests, Docker — gets it.
//
// When a connection's socket closes, postgres.js cancels its deferred write (`nextWriteTimer`)
// without forgetting it. From then on that connection never schedules a write again (its
// queries hang: the pool is poisoned), and a write that does run while the socket is null
// throws from a setImmediate callback — an uncaught exception that ends the server. Both
// happen whenever PostgreSQL drops connections under load (a restart, a network cut; see
// test/server/database-away.test.ts). The fix: teardown forgets the timer and the buffered
// bytes, and a write with no socket rejects its queries (CONNECTION_CLOSED) instead of throwing.
//
// Idempotent; refuses loudly when the installed file is not the one this was written for.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const MARK = '/* fieldchart: nextWrite guard */';
const edits = [
  [
    '  function nextWrite(fn) {\n    const x = socket.write(chunk, fn)',
    `  function nextWrite(fn) {\n    ${MARK}\n    if (!socket) {\n      nextWriteTimer !== null && clearImmediate(nextWriteTimer)\n      chunk = nextWriteTimer = null\n      error(Errors.connection('CONNECTION_CLOSED', options))\n      return false\n    }\n    const x = socket.write(chunk, fn)`,
  ],
  ['    clearImmediate(nextWriteTimer)\n    if (socket) {', '    clearImmediate(nextWriteTimer)\n    nextWriteTimer = null\n    if (socket) {'],
  ['    clearImmediate(nextWriteTimer)\n    socket.removeListener', '    clearImmediate(nextWriteTimer)\n    chunk = nextWriteTimer = null\n    socket.removeListener'],
];

const dir = path.join(root, 'node_modules/postgres');
if (!fs.existsSync(dir)) process.exit(0); // not installed here (a workspace without it)
const version = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')).version;
if (version !== '3.4.9') {
  console.error(`scripts/patch-postgres-js.mjs: written for postgres 3.4.9, found ${version}: check whether the upstream fix landed, then update or remove this script`);
  process.exit(1);
}
for (const flavour of ['src', 'cjs/src', 'cf/src']) {
  const file = path.join(dir, flavour, 'connection.js');
  let text = fs.readFileSync(file, 'utf8');
  if (text.includes(MARK)) continue;
  for (const [from, to] of edits) {
    if (text.split(from).length !== 2) {
      console.error(`scripts/patch-postgres-js.mjs: ${flavour}/connection.js does not match the expected source`);
      process.exit(1);
    }
    text = text.replace(from, to);
  }
  fs.writeFileSync(file, text);
}
