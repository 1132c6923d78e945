/**
 * A window's acknowledgements applied together (storage/outbox.ts `ackEntries`, one local
 * transaction) leave the device exactly as the same acknowledgements applied one at a time:
 * the same entries acknowledged, with the same results, times and settle counts, the same
 * receipts per visit (the greatest id acknowledged), and the same entries answered — an ack of
 * an entry already acknowledged, or of none, answers nothing. Random outboxes and random
 * answers, on two device databases side by side.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import type { LocalDb } from '../../client-lib/src/storage/local-db.ts';
import { ackEntries, appendToOutbox, type Ack, type Acked } from '../../client-lib/src/storage/outbox.ts';
import { openJson } from '../../client-lib/src/storage/row-cipher.ts';
import { outboxResultAd } from '../../client-lib/src/storage/seal-ad.ts';
import { openDeviceDb } from './support.ts';

const VISITS = [randomUUID(), randomUUID(), randomUUID()];
let together: LocalDb;
let oneByOne: LocalDb;
before(async () => {
  [together, oneByOne] = await Promise.all([openDeviceDb('memory://'), openDeviceDb('memory://')]);
});
after(async () => {
  await Promise.all([together.close(), oneByOne.close()]);
});

/** What the device holds of entries `ids`: the outbox rows (results opened) and every receipt. */
async function stateOf(db: LocalDb, ids: readonly number[]): Promise<unknown> {
  const rows = await db.query<{ mutation_id: number; name: string; client_time: string; schedule_uuid: string | null; state: string; acked_at: string | null; settle_after_synced: number | null; sealed_result: Uint8Array | null }>(
    `select mutation_id::int, name, client_time, schedule_uuid, state, acked_at, settle_after_synced::int, sealed_result from outbox where mutation_id = any($1::bigint[]) order by mutation_id`,
    [ids],
  );
  const outbox = await Promise.all(rows.map(async ({ sealed_result, ...r }) => ({ ...r, result: sealed_result ? await openJson(db.cipher, sealed_result, outboxResultAd(r)) : undefined })));
  const receipts = await db.query(`select schedule_uuid, last_acked_mutation_id::int, acked_at from visit_receipts order by schedule_uuid`);
  return { outbox, receipts };
}

test('property: acknowledgements applied together leave what they leave applied one at a time', async () => {
  let run = 0;
  await fc.assert(
    fc.asyncProperty(
      // The entries queued: each about a visit or none.
      fc.array(fc.option(fc.integer({ min: 0, max: VISITS.length - 1 }), { nil: null }), { minLength: 1, maxLength: 12 }),
      // The answers: indexes into the entries (repeats: an entry answered twice), and a few ids of nothing.
      fc.array(fc.oneof({ weight: 8, arbitrary: fc.nat(11) }, { weight: 1, arbitrary: fc.constant(-1) }), { maxLength: 16 }),
      fc.option(fc.integer({ min: 0, max: 5 }), { nil: null }),
      async (visits, picks, settleAfter) => {
        run++;
        const at = new Date(Date.UTC(2026, 10, 29, 8, run)).toISOString();
        const ids: number[][] = [[], []];
        for (const [side, db] of [together, oneByOne].entries()) {
          for (const [k, v] of visits.entries()) {
            const id = await db.transaction((tx) =>
              appendToOutbox(tx, { name: 'patient.create', args: { first_name: `R${run}.${k}` }, scheduleUuid: v === null ? null : (VISITS[v] as string), clientTime: at }),
            );
            ids[side]?.push(id);
          }
        }
        assert.deepEqual(ids[0], ids[1], 'both devices number their entries alike');
        const mine = ids[0] as number[];
        const acks: Ack[] = picks
          .filter((p) => p < mine.length)
          .map((p, n) => ({ mutationId: p < 0 ? 1_000_000 + n : (mine[p] as number), result: { recorded: n, run }, settleAfter }));
        const answeredTogether = await ackEntries(together, acks, at);
        const answeredOneByOne: Acked[] = [];
        for (const a of acks) answeredOneByOne.push(...(await ackEntries(oneByOne, [a], at)));
        const answered = (xs: Acked[]) => xs.map(({ entry, ack }) => [entry.mutation_id, ack.result] as const);
        assert.deepEqual(
          answered(answeredTogether),
          answered(answeredOneByOne).sort((a, b) => a[0] - b[0]),
        );
        assert.deepEqual(await stateOf(together, mine), await stateOf(oneByOne, mine));
      },
    ),
    { numRuns: 40 },
  );
});

test('an ack of an entry already acknowledged answers nothing and changes nothing', async () => {
  const id = await together.transaction((tx) => appendToOutbox(tx, { name: 'patient.create', args: { first_name: 'Once' }, scheduleUuid: VISITS[0] as string, clientTime: new Date().toISOString() }));
  const first = await ackEntries(together, [{ mutationId: id, result: { n: 1 }, settleAfter: null }], '2026-11-29T09:00:00.000Z');
  assert.deepEqual(
    first.map(({ entry }) => entry.mutation_id),
    [id],
  );
  const before = await stateOf(together, [id]);
  assert.deepEqual(await ackEntries(together, [{ mutationId: id, result: { n: 2 }, settleAfter: 3 }], '2026-11-29T10:00:00.000Z'), []);
  assert.deepEqual(await stateOf(together, [id]), before);
});
