import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sql } from 'drizzle-orm';
import { pgliteBackend } from '../helpers/backends.ts';
import { redactText, safeError } from '../../server/src/log-safety.ts';

const CANARY_EMAIL = 'jane.canary@example.org';
const CANARY_NAME = 'Canaryname Smith';

test('a failed drizzle query logs SQLSTATE and SQL, not the parameter values', async () => {
  // A test database restored from the migrated template (initdb would take seconds).
  const opened = await pgliteBackend.open();
  const { database } = opened;
  try {
    await database.db.execute(sql`create table t (id uuid primary key, email text unique)`);
    let caught: unknown;
    try {
      // Two errors in one: the value is quoted back by both drizzle and PostgreSQL.
      await database.db.execute(sql`insert into t (id, email) values (${CANARY_NAME}::uuid, ${CANARY_EMAIL})`);
    } catch (err) {
      caught = err;
    }
    assert.ok(caught instanceof Error);
    assert.ok(String((caught as Error).message).includes(CANARY_EMAIL), 'the raw error does quote the value');
    const logged = JSON.stringify(safeError(caught));
    assert.ok(!logged.includes(CANARY_EMAIL), logged);
    assert.ok(!logged.includes('Canaryname'), logged);
    assert.match(logged, /"code":"22P02"/);
    assert.match(logged, /insert into t/);
  } finally {
    await opened.drop();
  }
});

test('free text loses emails, quoted values and drizzle params', () => {
  const out = redactText(`Failed task 7 (send_mail) with error 550 <${CANARY_EMAIL}> unknown; "${CANARY_NAME}" params: a,b`);
  assert.ok(!out.includes(CANARY_EMAIL) && !out.includes('Canaryname'), out);
  assert.match(out, /Failed task 7 \(send_mail\)/);
});

test('application errors keep their own message', () => {
  assert.equal(safeError(new Error('mail transport closed')).message, 'mail transport closed');
});
