/**
 * Patient messaging over a real SMTP conversation: sending mails the patient (Reply-To the
 * conversation's reply address), the patient's reply comes back through the inbound listener
 * (nodemailer client → smtp-server) into the conversation, unread, with quoted history and
 * signature cut, and notifies the clinician. PHI sealed at rest; every listed error; tenant
 * isolation; deletion with the account.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'drizzle-orm';
import nodemailer from 'nodemailer';
import { operationContext, runOperation } from '@fieldchart/server';
import { rowsOf } from '../../../server/src/db/database.ts';
import { forEachBackend } from '../../helpers/backends.ts';
import { eventually } from '../../helpers/eventually.ts';
import { registerUser, startTestServer, type TestServer } from '../../helpers/test-server.ts';

const DOMAIN = 'replies.example.test';

forEachBackend('messages: email conversations with patients', (backend) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(backend, {
      env: { INBOUND_SMTP_PORT: '0', MESSAGES_REPLY_DOMAIN: DOMAIN, INBOUND_MAIL_MAX_BYTES: '8192' },
    });
  });
  after(() => server.close());

  const inbound = () =>
    nodemailer.createTransport({ host: '127.0.0.1', port: server.runtime.inboundSmtp?.port ?? 0, secure: false, ignoreTLS: true });

  /** The Reply-To address of the newest mail to `to`. */
  async function replyAddressOf(to: string, match: (text: string) => boolean = () => true): Promise<string> {
    const mail = await server.mail.waitFor(to, (m) => match(m.text));
    const found = /^Reply-To:\s*(reply\+[0-9a-f]{40}@[a-z.]+)\s*$/im.exec(mail.raw)?.[1];
    assert.ok(found, `no reply address in\n${mail.raw.slice(0, 600)}`);
    return found;
  }

  const send = (token: string, body: unknown) => server.api('POST', '/messages/send', { token, body });
  const conversations = async (token: string) => {
    const res = await server.api('GET', '/messages/conversations', { token });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return res.body.data as Array<Record<string, any>>;
  };

  test('send, reply by email, read: the whole conversation', async () => {
    const me = await registerUser(server);
    const patient = `pat.${Date.now()}@example.test`;
    const first = await send(me.token, { patient_email: patient, patient_name: 'Pat Quinlan', body: 'Please bring your medication list on Tuesday.', subject: 'Tuesday visit' });
    assert.equal(first.status, 200, JSON.stringify(first.body));
    assert.equal(first.body.status, true);
    assert.equal(typeof first.body.message, 'string');

    const mail = await server.mail.waitFor(patient);
    assert.equal(mail.subject, 'Tuesday visit');
    assert.match(mail.text, /Please bring your medication list on Tuesday\./);
    assert.match(mail.text, new RegExp(`${me.first_name} ${me.last_name}`));
    const address = await replyAddressOf(patient);
    assert.ok(address.endsWith(`@${DOMAIN}`));

    const [c] = await conversations(me.token);
    assert.ok(c);
    assert.equal(typeof c.id, 'number');
    assert.ok(Number.isInteger(c.id));
    assert.deepEqual(
      [c.patient_name, c.patient_email, c.subject, c.unread_count, c.message_count, c.last_message.direction, c.last_message.is_read],
      ['Pat Quinlan', patient, 'Tuesday visit', 0, 1, 'outbound', true],
    );

    // The patient answers from their mail client: quoted history and a signature below.
    await inbound().sendMail({
      from: patient,
      to: address,
      subject: 'Re: Tuesday visit',
      text: [
        'Will do. Can we make it 10am instead?',
        '',
        'Sent from my iPhone',
        '',
        `On Mon, 23 Nov 2026 at 09:12, ${me.first_name} ${me.last_name} <${address}> wrote:`,
        '> Please bring your medication list on Tuesday.',
      ].join('\n'),
    });
    const replied = await eventually(async () => {
      const [now] = await conversations(me.token);
      assert.equal(now?.unread_count, 1);
      return now;
    });
    assert.equal(replied?.message_count, 2);
    assert.equal(replied?.last_message.direction, 'inbound');
    assert.equal(replied?.last_message.body, 'Will do. Can we make it 10am instead?');
    assert.equal(replied?.last_message.is_read, false);

    const page = await server.api('GET', `/messages/${c.id}?per_page=1`, { token: me.token });
    assert.equal(page.status, 200);
    assert.deepEqual(page.body.meta, { current_page: 1, per_page: 1, total: 2, last_page: 2 });
    assert.equal(page.body.data[0].direction, 'inbound', 'newest first');
    assert.equal(page.body.data[0].subject, 'Re: Tuesday visit');
    const second = await server.api('GET', `/messages/${c.id}?page=2&per_page=1`, { token: me.token });
    assert.equal(second.body.data[0].body, 'Please bring your medication list on Tuesday.');
    assert.equal(second.body.data[0].conversation_id, c.id);

    // The reply became a notification for the clinician (ids only).
    const notes = await server.api('GET', '/notifications?is_read=0', { token: me.token });
    assert.equal(notes.status, 200);
    const received = notes.body.data.find((n: { type: string }) => n.type === 'message_received');
    assert.ok(received, JSON.stringify(notes.body));
    assert.equal(received.title, 'New message');
    assert.equal(received.data.conversation_id, c.id);
    assert.equal(received.data.message_uuid, page.body.data[0].uuid);
    assert.ok(!JSON.stringify(received).includes('10am'), 'no message text in the notification');

    // A reply with conversation_id stays in the conversation and keeps its reply address.
    const again = await send(me.token, { patient_email: patient, patient_name: 'Pat Quinlan', body: '10am works.', conversation_id: c.id });
    assert.equal(again.status, 200, JSON.stringify(again.body));
    assert.equal(await replyAddressOf(patient, (t) => t.includes('10am works.')), address);
    const list = await conversations(me.token);
    assert.equal(list.length, 1);
    assert.equal(list[0]?.message_count, 3);
    assert.equal(list[0]?.unread_count, 1, 'sending does not mark the patient’s reply read');

    const read = await server.api('PUT', `/messages/${c.id}/read`, { token: me.token });
    assert.equal(read.status, 200);
    assert.equal(read.body.status, true);
    assert.equal((await conversations(me.token))[0]?.unread_count, 0);
    const after = await server.api('GET', `/messages/${c.id}`, { token: me.token });
    assert.ok(after.body.data.every((m: { is_read: boolean; read_at: string | null }) => m.is_read && m.read_at));

    // A second conversation (no conversation_id) is listed first: latest activity first.
    await send(me.token, { patient_email: `other.${Date.now()}@example.test`, patient_name: 'Ola Berg', body: 'Hello' });
    const both = await conversations(me.token);
    assert.deepEqual(both.map((x) => x.patient_name), ['Ola Berg', 'Pat Quinlan']);
  });

  test('inbound mail: unknown token or foreign domain refused at RCPT (550); oversized refused; nothing stored', async () => {
    const me = await registerUser(server);
    const patient = `size.${Date.now()}@example.test`;
    assert.equal((await send(me.token, { patient_email: patient, patient_name: 'Sam Size', body: 'Hi' })).status, 200);
    const address = await replyAddressOf(patient);
    const refusedAt = async (to: string, text = 'hello') => {
      const err = await inbound()
        .sendMail({ from: patient, to, subject: 'x', text })
        .then(
          () => null,
          (e: { responseCode?: number }) => e,
        );
      assert.ok(err, `mail to ${to} was accepted`);
      return err.responseCode;
    };
    assert.equal(await refusedAt(`reply+${'0'.repeat(40)}@${DOMAIN}`), 550);
    assert.equal(await refusedAt(address.replace(DOMAIN, 'elsewhere.example.test')), 550);
    assert.equal(await refusedAt(`postmaster@${DOMAIN}`), 550);
    assert.equal(await refusedAt(address, 'x'.repeat(20_000)), 552);
    const [c] = await conversations(me.token);
    assert.equal(c?.message_count, 1, 'nothing stored');

    // The same listener still takes a proper reply afterwards; a quote-only reply stores nothing.
    await inbound().sendMail({ from: patient, to: address, subject: 'Re', text: '> only quoted' });
    await inbound().sendMail({ from: patient, to: address, subject: 'Re', text: 'Thanks!\n-- \nSam' });
    await eventually(async () => assert.equal((await conversations(me.token))[0]?.message_count, 2));
    const msgs = await server.api('GET', `/messages/${c?.id}`, { token: me.token });
    assert.equal(msgs.body.data[0].body, 'Thanks!');
  });

  test('PHI is sealed at rest: names, addresses, bodies and subjects appear nowhere in clear', async () => {
    const me = await registerUser(server);
    const tag = `Zephyrine${Date.now()}`;
    const patient = `${tag.toLowerCase()}@example.test`;
    assert.equal((await send(me.token, { patient_email: patient, patient_name: `${tag} Marsh`, body: `${tag} body text`, subject: `${tag} subject` })).status, 200);
    await server.mail.waitFor(patient);
    const { db } = server.runtime.database;
    for (const table of ['conversations', 'messages', 'mail_outbox', 'audit_log', 'notifications']) {
      const rows = rowsOf<{ r: string }>(await db.execute(sql`select t::text as r from ${sql.identifier(table)} t`));
      for (const r of rows) assert.ok(!r.r.toLowerCase().includes(tag.toLowerCase()), `${table} holds PHI in clear: ${r.r.slice(0, 200)}`);
    }
    const [conv] = rowsOf<{ patient_email_enc: string; reply_token_hash: string }>(
      await db.execute(sql`select patient_email_enc, reply_token_hash from conversations c join users u on u.id = c.owner_id where u.id = ${me.uuid}`),
    );
    assert.match(conv?.patient_email_enc ?? '', /^fc1\./);
    assert.match(conv?.reply_token_hash ?? '', /^[0-9a-f]{64}$/);
  });

  test('a PHI key rotation re-encrypts conversations and messages; they still read and replies still land', async () => {
    const me = await registerUser(server);
    const patient = `rot.${Date.now()}@example.test`;
    assert.equal((await send(me.token, { patient_email: patient, patient_name: 'Rita Rotate', body: 'Before rotation', subject: 'Keys' })).status, 200);
    const address = await replyAddressOf(patient);
    const ctx = operationContext(server.runtime.services, server.runtime.database);
    const rotated = (await runOperation(ctx, 'keys.rotate', {})) as { key_id: string; failed: number };
    assert.equal(rotated.failed, 0);
    const { db } = server.runtime.database;
    for (const [table, column] of [['conversations', 'patient_email_enc'], ['conversations', 'reply_token_enc'], ['messages', 'body_enc']] as const) {
      const rows = rowsOf<{ v: string }>(await db.execute(sql`select ${sql.identifier(column)} as v from ${sql.identifier(table)} where owner_id = ${me.uuid}`));
      assert.ok(rows.length > 0);
      for (const r of rows) assert.ok(r.v.startsWith(`fc1.${rotated.key_id}.`), `${table}.${column} not under the new key`);
    }
    const [c] = await conversations(me.token);
    assert.deepEqual([c?.patient_name, c?.patient_email, c?.subject, c?.last_message.body], ['Rita Rotate', patient, 'Keys', 'Before rotation']);
    assert.equal((await send(me.token, { patient_email: patient, patient_name: 'Rita Rotate', body: 'After rotation', conversation_id: c?.id })).status, 200);
    assert.equal(await replyAddressOf(patient, (t) => t.includes('After rotation')), address, 'the sealed reply token still opens');
    await inbound().sendMail({ from: patient, to: address, subject: 'Re: Keys', text: 'Got it' });
    await eventually(async () => assert.equal((await conversations(me.token))[0]?.unread_count, 1));
  });

  test('a retried send with the same Idempotency-Key sends once', async () => {
    const me = await registerUser(server);
    const patient = `idem.${Date.now()}@example.test`;
    const body = { patient_email: patient, patient_name: 'Ida Em', body: 'Only once' };
    const headers = { 'idempotency-key': `send-${me.uuid}` };
    const first = await server.api('POST', '/messages/send', { token: me.token, body, headers });
    const second = await server.api('POST', '/messages/send', { token: me.token, body, headers });
    assert.deepEqual([first.status, second.status], [200, 200]);
    assert.equal(second.headers.get('idempotent-replayed'), 'true');
    const list = await conversations(me.token);
    assert.deepEqual([list.length, list[0]?.message_count], [1, 1]);
    await server.mail.waitFor(patient);
    assert.equal(server.mail.messages.filter((m) => m.to.includes(patient)).length, 1);
  });

  test('422 names missing fields; 404 for unknown, malformed and foreign conversations; 401 without a token', async () => {
    const me = await registerUser(server);
    const other = await registerUser(server);
    const missing = await send(me.token, { subject: 'only a subject' });
    assert.equal(missing.status, 422);
    assert.equal(missing.body.status, false);
    assert.deepEqual(Object.keys(missing.body.errors).sort(), ['body', 'patient_email', 'patient_name']);
    const badEmail = await send(me.token, { patient_email: 'not-an-email', patient_name: 'A', body: 'b' });
    assert.equal(badEmail.status, 422);
    assert.ok(badEmail.body.errors.patient_email);
    const blank = await send(me.token, { patient_email: 'a@example.test', patient_name: 'A', body: '   ' });
    assert.equal(blank.status, 422);
    assert.ok(blank.body.errors.body);

    assert.equal((await send(other.token, { patient_email: 'o@example.test', patient_name: 'Oscar', body: 'Hi' })).status, 200);
    const [foreign] = await conversations(other.token);
    assert.ok(foreign);
    const unknownId = foreign.id + 100_000;
    for (const id of [String(foreign.id), String(unknownId), 'abc', '0', '-1', '99999999999', '1.5']) {
      const get = await server.api('GET', `/messages/${id}`, { token: me.token });
      assert.equal(get.status, 404, `GET /messages/${id}: ${JSON.stringify(get.body)}`);
      assert.equal(get.body.code, 'conversation_not_found');
      const put = await server.api('PUT', `/messages/${id}/read`, { token: me.token });
      assert.equal(put.status, 404, `PUT /messages/${id}/read`);
    }
    const intoForeign = await send(me.token, { patient_email: 'o@example.test', patient_name: 'Oscar', body: 'Sneaky', conversation_id: foreign.id });
    assert.equal(intoForeign.status, 404);
    assert.equal(intoForeign.body.code, 'conversation_not_found');
    assert.deepEqual(await conversations(me.token), [], 'nothing created by the refused calls');
    assert.equal((await conversations(other.token))[0]?.message_count, 1, 'the foreign conversation is untouched');

    assert.equal((await server.api('GET', '/messages/conversations')).status, 401);
    assert.equal((await server.api('POST', '/messages/send', { body: { patient_email: 'a@b.test', patient_name: 'A', body: 'b' } })).status, 401);
  });

  test('conversations, messages, their notifications and queued patient mail are deleted with the account', async () => {
    const me = await registerUser(server);
    const patient = `gone.${Date.now()}@example.test`;
    assert.equal((await send(me.token, { patient_email: patient, patient_name: 'Gina Gone', body: 'Bye' })).status, 200);
    const address = await replyAddressOf(patient);
    await inbound().sendMail({ from: patient, to: address, subject: 'Re', text: 'Ok' });
    await eventually(async () => assert.equal((await conversations(me.token))[0]?.message_count, 2));
    const del = await server.api('POST', '/delete-account', { token: me.token, body: { password: me.password } });
    assert.equal(del.status, 200, JSON.stringify(del.body));
    const { db } = server.runtime.database;
    for (const table of ['conversations', 'messages', 'notifications', 'mail_outbox']) {
      const [row] = rowsOf<{ n: number }>(await db.execute(sql`select count(*)::int as n from ${sql.identifier(table)} where owner_id = ${me.uuid}`));
      assert.equal(row?.n, 0, `${table} rows left`);
    }
    // The old reply address now names nothing: refused at RCPT.
    const err = await inbound()
      .sendMail({ from: patient, to: address, subject: 'Re', text: 'Still there?' })
      .then(
        () => null,
        (e: { responseCode?: number }) => e,
      );
    assert.equal(err?.responseCode, 550);
  });
});
