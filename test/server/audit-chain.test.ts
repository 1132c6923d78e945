/**
 * The tamper-evident audit trail: the insert trigger chains each actor's rows, concurrent
 * writers never fork a chain, and `audit verify` (service and CLI) names the first broken
 * link after a row is edited, deleted or cut off the end. A batch's rows (`recordSucceeded`, the
 * sync channel's sets) are chained by `audit_append` in one statement: the same chain as the
 * trigger's, wherever it falls among the trigger's rows.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, afterEach, beforeEach, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import fc from 'fast-check';
import { openDatabase, rowsOf, type Db } from '../../server/src/db/database.ts';
import { createAuditLog, type AuditContext } from '../../server/src/services/audit/audit-log.ts';
import { createAuditVerify } from '../../server/src/services/audit/audit-verify.ts';
import { systemClock } from '../../server/src/clock.ts';
import { backends, forEachBackend, serverDataDir, type TestDatabase } from '../helpers/backends.ts';
import { runCli } from '../helpers/processes.ts';

const orgA = randomUUID();
const orgB = randomUUID();
const alice = randomUUID(); // in orgA
const bob = randomUUID(); // in orgB
const solo = randomUUID(); // in no organization
const ctxOf = (organizationId: string | null, actorUserId: string | null): AuditContext => ({ organizationId, actorUserId, requestId: randomUUID() });

async function writeTrail(db: Db): Promise<void> {
  const audit = createAuditLog({ db, clock: systemClock });
  const entry = { action: 'read' as const, resourceType: 'patient', resourceId: randomUUID(), details: { route: 'GET /patient/my-patients', count: 3 } };
  for (let i = 0; i < 4; i++) await audit.record(db, ctxOf(orgA, alice), entry, 'success');
  for (let i = 0; i < 3; i++) await audit.record(db, ctxOf(orgB, bob), entry, i === 1 ? 'denied' : 'success');
  for (let i = 0; i < 2; i++) await audit.record(db, ctxOf(null, solo), entry, 'success');
  await audit.record(db, ctxOf(orgA, null), { action: 'update', resourceType: 'organization', details: { via: 'operator' } }, 'success');
  await audit.record(db, ctxOf(null, null), { action: 'export', resourceType: 'audit_log', details: { via: 'operator' } }, 'success');
}

async function idsOf(db: Db, chain: string): Promise<number[]> {
  const rows = rowsOf<{ id: string | number }>(await db.execute(sql`select id from audit_log where chain = ${chain} order by chain_seq`));
  return rows.map((r) => Number(r.id));
}

/** What an attacker with the table owner's rights does: lift the append-only guard, then write. */
async function tamper(db: Db, statement: ReturnType<typeof sql>): Promise<void> {
  await db.execute(sql`alter table audit_log disable trigger audit_log_append_only`);
  await db.execute(statement);
  await db.execute(sql`alter table audit_log enable trigger audit_log_append_only`);
}

forEachBackend('audit hash chain', (backend) => {
  let t: TestDatabase;
  let db: Db;
  beforeEach(async () => {
    t = await backend.open();
    db = t.database.db;
  });
  afterEach(() => t.drop());

  test('each actor has its own chain, numbered from 1, and verify finds it intact', async () => {
    await writeTrail(db);
    const v = await createAuditVerify({ db }).verify();
    assert.equal(v.ok, true, JSON.stringify(v.broken));
    assert.equal(v.rowsChecked, 11);
    assert.equal(v.chainsChecked, 5);
    assert.deepEqual(
      v.heads.map((h) => [h.chain, h.seq]),
      [[`user:${alice}`, 4], [`user:${bob}`, 3], ['system', 1], [`user:${solo}`, 2], [`org:${orgA}`, 1]].sort((a, b) => String(a[0]).localeCompare(String(b[0]))),
    );
    for (const h of v.heads) assert.match(h.hash, /^[0-9a-f]{64}$/);
    const one = await createAuditVerify({ db }).verify({ chain: `user:${bob}` });
    assert.equal(one.rowsChecked, 3);
    assert.equal(one.heads.length, 1);
  });

  test('the application cannot change or delete an entry', async () => {
    await writeTrail(db);
    // drizzle wraps the database's error: its cause carries the trigger's message.
    const refused = (err: unknown) => /audit_log is append-only/.test(String((err as { cause?: unknown }).cause ?? err));
    await assert.rejects(db.execute(sql`update audit_log set outcome = 'success' where outcome = 'denied'`), refused);
    await assert.rejects(db.execute(sql`delete from audit_log`), refused);
  });

  test('an edited row is named as the first broken link, and only its chain breaks', async () => {
    await writeTrail(db);
    const [, second] = await idsOf(db, `user:${bob}`);
    await tamper(db, sql`update audit_log set outcome = 'success' where id = ${second}`);
    const v = await createAuditVerify({ db }).verify();
    assert.equal(v.ok, false);
    assert.deepEqual(v.broken, [{ chain: `user:${bob}`, seq: 2, id: second, reason: 'altered' }]);
  });

  test('a row rewritten with its hash recomputed, a deleted row, and a cut-off end are each found', async () => {
    await writeTrail(db);
    const a = await idsOf(db, `user:${alice}`);
    const b = await idsOf(db, `user:${bob}`);
    // Rewriting the hashes too does not help: the next link was made from the old hash.
    await tamper(db, sql`update audit_log set details = '{"route":"elsewhere"}'::jsonb where id = ${a[0]!}`);
    await tamper(db, sql`update audit_log set row_hash = audit_chain_link(coalesce((select row_hash from audit_log p where p.chain = audit_log.chain and p.chain_seq = audit_log.chain_seq - 1), ''), audit_log)
      where id = ${a[0]!}`);
    await tamper(db, sql`delete from audit_log where id = ${b[1]!}`);
    await tamper(db, sql`delete from audit_log where chain = ${`user:${solo}`} and chain_seq = 2`);
    const v = await createAuditVerify({ db }).verify();
    assert.deepEqual(v.broken, [
      { chain: `user:${alice}`, seq: 2, id: a[1]!, reason: 'altered' },
      { chain: `user:${bob}`, seq: 3, id: b[2]!, reason: 'missing' },
      { chain: `user:${solo}`, seq: 2, id: null, reason: 'truncated' },
    ]);
  });

  test('one statement of interleaved chains, savepoints kept and rolled back: each chain as row-by-row writes make it, and the heads table names every last row after each statement', async () => {
    const audit = createAuditLog({ db, clock: systemClock });
    const entry = (i: number) => ({ ctx: ctxOf(orgA, [alice, bob, alice, null, alice][i % 5] ?? null), entry: { action: 'read' as const, resourceType: 'visit', details: { i } } });
    const headsMatchRows = async (on: Db) => {
      const wrong = rowsOf<{ chain: string }>(
        await on.execute(sql`select h.chain from audit_chain_heads h
          left join audit_log l on l.chain = h.chain and l.chain_seq = h.seq
          where l.id is null or l.row_hash <> h.hash
             or h.seq <> (select max(chain_seq) from audit_log m where m.chain = h.chain)`),
      );
      assert.deepEqual(wrong.map((r) => r.chain), []);
    };
    await db.transaction(async (tx) => {
      // One INSERT: alice, bob, alice, the organization, alice.
      await audit.recordSucceeded(tx, [0, 1, 2, 3, 4].map(entry));
      await headsMatchRows(tx);
      await assert.rejects(
        tx.transaction(async (sp) => {
          await audit.recordSucceeded(sp, [0, 2].map(entry));
          throw new Error('rolled back');
        }),
        /rolled back/,
      );
      await tx.transaction(async (sp) => audit.recordSucceeded(sp, [1].map(entry)));
      await audit.recordSucceeded(tx, [0].map(entry));
      await headsMatchRows(tx);
    });
    // A new transaction starts from the table's head.
    await audit.record(db, ctxOf(orgA, alice), { action: 'read', resourceType: 'visit' }, 'success');
    const seqs = async (chain: string) => rowsOf<{ s: string | number }>(await db.execute(sql`select chain_seq as s from audit_log where chain = ${chain} order by chain_seq`)).map((r) => Number(r.s));
    assert.deepEqual(await seqs(`user:${alice}`), [1, 2, 3, 4, 5]);
    assert.deepEqual(await seqs(`user:${bob}`), [1, 2]);
    assert.deepEqual(await seqs(`org:${orgA}`), [1]);
    await headsMatchRows(db);
    const v = await createAuditVerify({ db }).verify();
    assert.equal(v.ok, true, JSON.stringify(v.broken));
    assert.equal(v.rowsChecked, 8);
  });

  /** Every head names its chain's last row, and every chain is numbered 1..n. */
  async function headsMatchRows(on: Db): Promise<void> {
    const wrong = rowsOf<{ chain: string }>(
      await on.execute(sql`select h.chain from audit_chain_heads h
        left join audit_log l on l.chain = h.chain and l.chain_seq = h.seq
        where l.id is null or l.row_hash <> h.hash
           or h.seq <> (select max(chain_seq) from audit_log m where m.chain = h.chain)
           or h.seq <> (select count(*) from audit_log m where m.chain = h.chain)`),
    );
    assert.deepEqual(wrong.map((r) => r.chain), []);
  }

  test('a batch appended between row-by-row writes of the same chains, in one transaction, continues each chain where the trigger left it and the trigger continues after it', async () => {
    const audit = createAuditLog({ db, clock: systemClock });
    const one = (actor: string | null, i: number) => ({ ctx: ctxOf(orgA, actor), entry: { action: 'read' as const, resourceType: 'visit', resourceId: randomUUID(), details: { i } } });
    await db.transaction(async (tx) => {
      await audit.record(tx, ctxOf(orgA, alice), { action: 'read', resourceType: 'visit' }, 'success');
      await audit.record(tx, ctxOf(orgA, alice), { action: 'read', resourceType: 'visit' }, 'success');
      // The trigger's head for alice is in the transaction's setting now.
      await audit.recordSucceeded(tx, [one(alice, 0), one(bob, 1), one(alice, 2)]);
      await audit.record(tx, ctxOf(orgA, alice), { action: 'read', resourceType: 'visit' }, 'success');
      await audit.recordSucceeded(tx, [one(bob, 3), one(null, 4)]);
      await audit.record(tx, ctxOf(orgA, bob), { action: 'read', resourceType: 'visit' }, 'success');
      await headsMatchRows(tx);
    });
    const seqs = async (chain: string) => rowsOf<{ s: string | number }>(await db.execute(sql`select chain_seq as s from audit_log where chain = ${chain} order by id`)).map((r) => Number(r.s));
    // In each chain, rows are numbered in the order they were written (ids rise with positions).
    assert.deepEqual(await seqs(`user:${alice}`), [1, 2, 3, 4, 5]);
    assert.deepEqual(await seqs(`user:${bob}`), [1, 2, 3]);
    assert.deepEqual(await seqs(`org:${orgA}`), [1]);
    const v = await createAuditVerify({ db }).verify();
    assert.equal(v.ok, true, JSON.stringify(v.broken));
    assert.equal(v.rowsChecked, 9);
  });

  test('an insert that brings its own position and hash is chained by the trigger all the same; only audit_append places its rows itself', async () => {
    await writeTrail(db);
    await db.execute(sql`insert into audit_log (actor_user_id, organization_id, action, resource_type, outcome, chain, chain_seq, row_hash)
      values (${alice}::uuid, ${orgA}::uuid, 'read', 'visit', 'success', 'system', 99, repeat('0', 64))`);
    const [row] = rowsOf<{ chain: string; chain_seq: string | number }>(await db.execute(sql`select chain, chain_seq from audit_log order by id desc limit 1`));
    assert.deepEqual([row?.chain, Number(row?.chain_seq)], [`user:${alice}`, 5]);
    assert.equal((await createAuditVerify({ db }).verify()).ok, true);
    // Claiming to be audit_append does not make a forged row pass verify.
    const forged = await db.transaction(async (tx) => {
      await tx.execute(sql`select set_config('fieldchart.audit_appending', 'on', true)`);
      const inserted = await tx.execute(sql`insert into audit_log (actor_user_id, organization_id, action, resource_type, outcome, chain, chain_seq, row_hash)
        values (${alice}::uuid, ${orgA}::uuid, 'read', 'visit', 'success', ${`user:${alice}`}, 6, repeat('0', 64)) returning id`);
      return rowsOf<{ id: string | number }>(inserted)[0]?.id;
    });
    const v = await createAuditVerify({ db }).verify();
    assert.deepEqual(v.broken, [{ chain: `user:${alice}`, seq: 6, id: Number(forged), reason: 'altered' }]);
  });

  test('property: any mix of row-by-row writes and appended batches, in savepoints kept or rolled back, leaves chains numbered 1..n that verify accepts', async () => {
    const actors = [alice, bob, null];
    const op = fc.record({
      batch: fc.option(fc.array(fc.constantFrom(...actors), { minLength: 1, maxLength: 6 }), { nil: null, freq: 2 }),
      actor: fc.constantFrom(...actors),
      inSavepoint: fc.boolean(),
      rollBack: fc.boolean(),
    });
    await fc.assert(
      fc.asyncProperty(fc.array(fc.array(op, { minLength: 1, maxLength: 6 }), { minLength: 1, maxLength: 3 }), async (transactions) => {
        await db.execute(sql`delete from audit_chain_heads`);
        await tamper(db, sql`delete from audit_log`);
        const audit = createAuditLog({ db, clock: systemClock });
        const write = (on: Db, o: (typeof transactions)[number][number]) =>
          o.batch
            ? audit.recordSucceeded(on, o.batch.map((a, i) => ({ ctx: ctxOf(orgA, a), entry: { action: 'read' as const, resourceType: 'visit', details: { i } } })))
            : audit.record(on, ctxOf(orgA, o.actor), { action: 'read', resourceType: 'visit' }, 'success');
        let expected = 0;
        for (const ops of transactions) {
          let kept = 0;
          await db.transaction(async (tx) => {
            for (const o of ops) {
              const n = o.batch ? o.batch.length : 1;
              if (!o.inSavepoint) {
                await write(tx, o);
                kept += n;
              } else if (o.rollBack) {
                await assert.rejects(
                  tx.transaction(async (sp) => {
                    await write(sp, o);
                    throw new Error('rolled back');
                  }),
                  /rolled back/,
                );
              } else {
                await tx.transaction((sp) => write(sp, o));
                kept += n;
              }
            }
            await headsMatchRows(tx);
          });
          expected += kept;
        }
        await headsMatchRows(db);
        const v = await createAuditVerify({ db }).verify();
        assert.equal(v.ok, true, JSON.stringify(v.broken));
        assert.equal(v.rowsChecked, expected);
      }),
      { numRuns: 40 },
    );
  });

  test('concurrent writers of one chain (one clinician on several devices) never fork it', async () => {
    const audit = createAuditLog({ db, clock: systemClock });
    const writers = Array.from({ length: 12 }, (_, i) =>
      db.transaction(async (tx) => {
        // Half write row by row (REST), half append a batch (a device's queued mutations).
        if (i % 2 === 0) await audit.record(tx, ctxOf(orgA, alice), { action: 'read', resourceType: 'visit', details: { i } }, 'success');
        else await audit.recordSucceeded(tx, [0, 1, 2].map((k) => ({ ctx: ctxOf(orgA, alice), entry: { action: 'read' as const, resourceType: 'visit', details: { i, k } } })));
        // Hold the transaction open after the insert, so the next writer must wait on the head.
        await tx.execute(sql`select pg_sleep(0.02)`);
      }),
    );
    await Promise.all(writers);
    const rows = rowsOf<{ chain_seq: string | number }>(await db.execute(sql`select chain_seq from audit_log where chain = ${`user:${alice}`} order by chain_seq`));
    assert.deepEqual(rows.map((r) => Number(r.chain_seq)), Array.from({ length: 24 }, (_, i) => i + 1));
    assert.equal((await createAuditVerify({ db }).verify()).ok, true);
  });
});

describe('fieldchart audit verify', () => {
  const dirs: string[] = [];
  after(() => {
    for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
  });

  async function verifyCli(env: Record<string, string>, db: Db, close: () => Promise<void>): Promise<void> {
    await writeTrail(db);
    await close();
    const intact = await runCli(['audit', 'verify'], env);
    assert.equal(intact.code, 0, intact.stderr);
    assert.match(intact.stdout, /audit trail intact: 11 rows in 5 chains/);
    assert.match(intact.stdout, new RegExp(`head user:${bob} 3 [0-9a-f]{64}`));
  }

  test('embedded: intact, then a row edited in the database is named and the exit code is 1', async () => {
    const dataDir = await serverDataDir('fieldchart-audit-', false);
    dirs.push(dataDir);
    const env = { FIELDCHART_DATA_DIR: dataDir };
    const open = () => openDatabase({ kind: 'pglite', dataDir: path.join(dataDir, 'pgdata') });
    let database = await open();
    await verifyCli(env, database.db, () => database.close());
    database = await open();
    const [, second] = await idsOf(database.db, `user:${bob}`);
    await tamper(database.db, sql`update audit_log set action = 'list' where id = ${second!}`);
    await database.close();
    const broken = await runCli(['audit', 'verify'], env);
    assert.equal(broken.code, 1);
    assert.match(broken.stderr, new RegExp(`first broken link: chain user:${bob}, position 2, audit row id ${second}: the row was changed`));
    const json = await runCli(['--json', 'audit', 'verify'], env);
    assert.equal(json.code, 1);
    assert.deepEqual(JSON.parse(json.stdout).broken, [{ chain: `user:${bob}`, seq: 2, id: second, reason: 'altered' }]);
  });

  const postgres = backends.find((b) => b.name === 'postgres');
  if (postgres) {
    test('PostgreSQL: intact, then a row edited in the database is named and the exit code is 1', async () => {
      const t = await postgres.open();
      try {
        const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'fieldchart-audit-'));
        dirs.push(dataDir);
        const env = { DATABASE_URL: t.url ?? '', FIELDCHART_DATA_DIR: dataDir };
        await verifyCli(env, t.database.db, async () => {});
        const [first] = await idsOf(t.database.db, `user:${alice}`);
        await tamper(t.database.db, sql`update audit_log set at = at - interval '1 hour' where id = ${first!}`);
        const broken = await runCli(['audit', 'verify'], env);
        assert.equal(broken.code, 1);
        assert.match(broken.stderr, new RegExp(`first broken link: chain user:${alice}, position 1, audit row id ${first}: the row was changed`));
      } finally {
        await t.drop();
      }
    });
  }
});
