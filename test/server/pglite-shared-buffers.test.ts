/**
 * The embedded database's shared buffers (db/database.ts `sharedBuffers`): PGlite's own 128 MB
 * for the server, less where asked (a CLI command's one-shot open), on the same data dir.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { sql } from 'drizzle-orm';
import { openDatabase, rowsOf } from '../../server/src/db/database.ts';
import { seedPgliteDataDir } from '../helpers/backends.ts';

test('the embedded database starts with 128 MB of shared buffers unless the opener asks for less; the data is the same', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fieldchart-shared-buffers-'));
  const setting = async (database: Awaited<ReturnType<typeof openDatabase>>) => {
    const result = await database.db.execute(sql`select current_setting('shared_buffers') as shared_buffers, (select count(*)::int from users) as users`);
    return rowsOf<{ shared_buffers: string; users: number }>(result)[0];
  };
  try {
    await seedPgliteDataDir(dir);
    const small = await openDatabase({ kind: 'pglite', dataDir: dir, sharedBuffers: '16MB' });
    try {
      assert.deepEqual(await setting(small), { shared_buffers: '16MB', users: 0 });
    } finally {
      await small.close();
    }
    const server = await openDatabase({ kind: 'pglite', dataDir: dir });
    try {
      assert.deepEqual(await setting(server), { shared_buffers: '128MB', users: 0 });
    } finally {
      await server.close();
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
