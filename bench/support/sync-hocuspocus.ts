/**
 * Hocuspocus (@hocuspocus/server), the reference Yjs server, beside our draft fan-out:
 *
 *   memory    no persistence: an update is applied and broadcast, nothing is written.
 *   database  @hocuspocus/extension-database storing every change (debounce 0) to a table in
 *             the same database as the Fieldchart server, the document sealed with the same
 *             PHI key ring. Hocuspocus stores the whole document state after it has broadcast
 *             the update (onStoreDocument runs after the fan-out), where Fieldchart appends the
 *             update and commits it before fanning it out.
 */
import type { AddressInfo } from 'node:net';
import { sql } from 'drizzle-orm';
import { Server } from '@hocuspocus/server';
import { Database as DatabaseExtension } from '@hocuspocus/extension-database';
import type { Db } from '../../server/src/db/database.ts';
import { rowsOf } from '../../server/src/db/database.ts';
import type { PhiCrypto } from '../../server/src/security/phi-crypto.ts';

export interface HocuspocusPair {
  readonly memoryUrl: string;
  readonly databaseUrl: string;
  close(): Promise<void>;
}

const TABLE = 'bench_hocuspocus_documents';

async function listen(server: Server): Promise<string> {
  await server.listen();
  const { port } = server.httpServer.address() as AddressInfo;
  return `ws://127.0.0.1:${port}`;
}

export async function startHocuspocusPair(deps: { db: Db; phi: PhiCrypto }): Promise<HocuspocusPair> {
  const { db, phi } = deps;
  await db.execute(sql.raw(`create table if not exists ${TABLE} (name text primary key, state_enc text not null, updated_at timestamptz not null default now())`));
  const base = { port: 0, address: '127.0.0.1', quiet: true, stopOnSignals: false } as const;

  const memory = new Server({ ...base, name: 'bench-memory' });
  const persisted = new Server({
    ...base,
    name: 'bench-database',
    debounce: 0,
    extensions: [
      new DatabaseExtension({
        async fetch({ documentName }) {
          const [row] = rowsOf<{ state_enc: string }>(await db.execute(sql`select state_enc from ${sql.raw(TABLE)} where name = ${documentName}`));
          if (!row) return null;
          return Buffer.from(phi.open(row.state_enc, TABLE, 'state_enc', documentName) ?? '', 'base64');
        },
        async store({ documentName, state }) {
          const sealed = phi.seal(Buffer.from(state).toString('base64'), TABLE, 'state_enc', documentName) as string;
          await db.execute(
            sql`insert into ${sql.raw(TABLE)} (name, state_enc) values (${documentName}, ${sealed})
                on conflict (name) do update set state_enc = excluded.state_enc, updated_at = now()`,
          );
        },
      }),
    ],
  });
  const memoryUrl = await listen(memory);
  const databaseUrl = await listen(persisted);
  return {
    memoryUrl,
    databaseUrl,
    async close() {
      await memory.destroy();
      await persisted.destroy();
    },
  };
}
