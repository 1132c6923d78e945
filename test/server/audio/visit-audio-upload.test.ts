/**
 * POST /visit-audio-upload and GET /audio/{uuid} on a real server: real wav/mp3/m4a files,
 * type decided by the bytes, 413 while streaming (nothing kept, memory flat), 422 and 404
 * paths with nothing stored, tenant isolation, Range requests, and encryption at rest.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { forEachBackend } from '../../helpers/backends.ts';
import { eventually } from '../../helpers/eventually.ts';
import { startTestServer, type TestServer } from '../../helpers/test-server.ts';
import { clinicianWithVisit, fileOf, filesUnder, speech, tempFile, upload } from './audio-fixtures.ts';

type Row = Record<string, unknown>;
const rowsOf = (r: unknown): Row[] => (Array.isArray(r) ? (r as Row[]) : ((r as { rows?: Row[] }).rows ?? []));

forEachBackend('audio: visit-audio-upload and download', (backend) => {
  let server: TestServer;
  before(async () => {
    // A small cap for the upload route keeps the over-cap test fast; the 50 MB default is checked in the config test.
    server = await startTestServer(backend, { env: { VISIT_AUDIO_MAX_BYTES: String(8 * 1024 * 1024) } });
  });
  after(() => server.close());

  const audioRows = async () =>
    Number(rowsOf(await server.runtime.services.unitOfWork.db.execute(sql`select count(*)::int as n from audio_files`))[0]?.n);
  const objects = () => filesUnder(path.join(server.dataDir, 'audio', 'objects'));

  const download = (token: string, url: string, headers: Record<string, string> = {}) =>
    fetch(url.replace(server.config.appUrl, server.url), { headers: { authorization: `Bearer ${token}`, ...headers } });

  test('wav, mp3 and m4a are stored by their bytes, whatever name and type the client declares, and download intact', async () => {
    const { user, visit } = await clinicianWithVisit(server);
    for (const format of ['wav', 'mp3', 'm4a'] as const) {
      const file = speech(format);
      // A misleading declared type and name: only the bytes count.
      const res = await upload(server, user.token, [fileOf(file, 'text/plain', 'notes.txt'), { name: 'schedule_uuid', value: visit }]);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(res.body.data.format, format);
      assert.match(res.body.data.url, new RegExp(`/api/therapist/v1/audio/${res.body.data.uuid}$`));
      const got = await download(user.token, res.body.data.url);
      assert.equal(got.status, 200);
      assert.equal(got.headers.get('cache-control'), 'no-store');
      assert.equal(got.headers.get('content-type'), { wav: 'audio/wav', mp3: 'audio/mpeg', m4a: 'audio/mp4' }[format]);
      assert.ok(Buffer.from(await got.arrayBuffer()).equals(fs.readFileSync(file)), `${format} round-trips byte for byte`);
    }
  });

  test('one recording uploaded twice at once under one Idempotency-Key (a retry while the first runs): one row, one stored object', async () => {
    const { user, visit } = await clinicianWithVisit(server);
    const bytes = fs.readFileSync(speech('wav'));
    // Streamed slowly, so the retry claims the key while the first is still reading its body:
    // both store an object, and the answer that commits second rolls its row back.
    const slowly = async function* () {
      for (let at = 0; at < bytes.length; at += 16 * 1024) {
        yield bytes.subarray(at, at + 16 * 1024);
        await new Promise((r) => setTimeout(r, 20));
      }
    };
    const key = `upload-${visit}`;
    const part = { name: 'audio', filename: 'visit.wav', contentType: 'audio/wav', body: slowly };
    const mine = path.join(server.dataDir, 'audio', 'objects', user.uuid);
    const answers = await Promise.all([0, 1].map(() => upload(server, user.token, [{ name: 'schedule_uuid', value: visit }, part], { 'idempotency-key': key })));
    assert.deepEqual(answers.map((a) => a.status).sort(), [200, 409], JSON.stringify(answers.map((a) => a.body)));
    const rows = rowsOf(await server.runtime.services.unitOfWork.db.execute(sql`select id from audio_files where user_id = ${user.uuid}::uuid`));
    assert.equal(rows.length, 1);
    assert.equal(rows[0]?.id, answers.find((a) => a.status === 200)?.body.data.uuid);
    // The loser's object went with its row: nothing unreadable is left in storage.
    assert.deepEqual(filesUnder(mine).map((f) => path.basename(f)), [`${String(rows[0]?.id)}.fca`]);
  });

  test('schedule_uuid before the file part works too; the url needs the bearer token', async () => {
    const { user, visit } = await clinicianWithVisit(server);
    const res = await upload(server, user.token, [{ name: 'schedule_uuid', value: visit }, fileOf(speech('wav'))]);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const anonymous = await fetch(res.body.data.url.replace(server.config.appUrl, server.url));
    assert.deepEqual([anonymous.status, (await anonymous.json()).status], [401, false]);
  });

  test('422: a renamed text file, garbage, an empty file, missing or invalid schedule_uuid, no file — nothing stored', async () => {
    const { user, visit } = await clinicianWithVisit(server);
    const rowsBefore = await audioRows();
    const objectsBefore = objects().length;
    const text = tempFile('dictation.mp3', 'This is a text file pretending to be audio.\n'.repeat(100));
    const cases: Array<[Parameters<typeof upload>[2], string]> = [
      [[fileOf(text, 'audio/mpeg'), { name: 'schedule_uuid', value: visit }], 'audio'],
      [[{ name: 'schedule_uuid', value: visit }, fileOf(tempFile('garbage.wav', Buffer.from([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14])))], 'audio'],
      [[fileOf(tempFile('empty.wav', Buffer.alloc(0))), { name: 'schedule_uuid', value: visit }], 'audio'],
      [[fileOf(speech('wav'))], 'schedule_uuid'],
      [[fileOf(speech('wav')), { name: 'schedule_uuid', value: 'not-a-uuid' }], 'schedule_uuid'],
      [[{ name: 'schedule_uuid', value: visit }], 'audio'],
    ];
    for (const [parts, field] of cases) {
      const res = await upload(server, user.token, parts);
      assert.equal(res.status, 422, JSON.stringify(res.body));
      assert.equal(res.body.status, false);
      assert.ok(res.body.errors?.[field], `${field}: ${JSON.stringify(res.body)}`);
    }
    assert.equal(await audioRows(), rowsBefore);
    assert.equal(objects().length, objectsBefore, 'no staged object left behind');
  });

  test("another clinician's visit (or an unknown one) is 404 and nothing is stored, in either part order", async () => {
    const { user } = await clinicianWithVisit(server);
    const other = await clinicianWithVisit(server);
    const rowsBefore = await audioRows();
    const objectsBefore = objects().length;
    for (const visit of [other.visit, crypto.randomUUID()]) {
      const first = await upload(server, user.token, [{ name: 'schedule_uuid', value: visit }, fileOf(speech('wav'))]);
      const last = await upload(server, user.token, [fileOf(speech('wav')), { name: 'schedule_uuid', value: visit }]);
      assert.deepEqual([first.status, last.status], [404, 404], JSON.stringify([first.body, last.body]));
      assert.deepEqual(first.body, last.body);
    }
    assert.equal(await audioRows(), rowsBefore);
    assert.equal(objects().length, objectsBefore);
  });

  test('413 while streaming a file over the cap: nothing kept, and the server does not buffer it', async () => {
    const { user, visit } = await clinicianWithVisit(server);
    const cap = server.config.audio.visitAudioMaxBytes;
    // Six times the cap: a server that buffered the upload would grow by far more than the bound below.
    const total = cap * 6;
    const head = fs.readFileSync(speech('wav'));
    const chunk = Buffer.alloc(256 * 1024, 7);
    const body = async function* () {
      yield head;
      for (let sent = head.length; sent < total; sent += chunk.length) yield chunk;
    };
    globalThis.gc?.();
    const rssBefore = process.memoryUsage().rss;
    let peak = rssBefore;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 5);
    const res = await upload(server, user.token, [{ name: 'schedule_uuid', value: visit }, { name: 'audio', filename: 'long.wav', contentType: 'audio/wav', body }]).finally(() =>
      clearInterval(sampler),
    );
    assert.equal(res.status, 413, JSON.stringify(res.body));
    assert.equal(res.body.status, false);
    assert.equal(res.body.code, 'audio_too_large');
    // The test process is also the server (and the embedded database, whose thread's heap and
    // WASM memory move the RSS by up to ~30 MB on their own under load): a buffered upload
    // would add at least the 50 MB streamed, above this bound.
    assert.ok(peak - rssBefore < total * 0.8, `RSS grew ${(peak - rssBefore) / 1e6} MB while ${total / 1e6} MB streamed`);
    const mine = rowsOf(await server.runtime.services.unitOfWork.db.execute(sql`select count(*)::int as n from audio_files where visit_id = ${visit}`));
    assert.equal(Number(mine[0]?.n), 0);
    assert.equal(filesUnder(path.join(server.dataDir, 'audio', 'objects', user.uuid)).length, 0);
  });

  test('a client that goes away mid-upload leaves no object, not even a partial one, and the server carries on', async () => {
    const { user, visit } = await clinicianWithVisit(server);
    const boundary = '----fieldchartabort';
    await new Promise<void>((resolve) => {
      const req = http.request(`${server.url}/api/therapist/v1/visit-audio-upload`, {
        method: 'POST',
        headers: { authorization: `Bearer ${user.token}`, 'content-type': `multipart/form-data; boundary=${boundary}`, 'content-length': String(5 * 1024 * 1024) },
      });
      req.on('error', () => resolve());
      req.write(`--${boundary}\r\nContent-Disposition: form-data; name="schedule_uuid"\r\n\r\n${visit}\r\n`);
      req.write(`--${boundary}\r\nContent-Disposition: form-data; name="audio"; filename="a.wav"\r\nContent-Type: audio/wav\r\n\r\n`);
      req.write(fs.readFileSync(speech('wav')));
      req.write(Buffer.alloc(1024 * 1024, 1), () => setTimeout(() => {
        req.destroy();
        resolve();
      }, 300));
    });
    const mine = path.join(server.dataDir, 'audio', 'objects', user.uuid);
    await eventually(() => assert.deepEqual(filesUnder(mine), []), { timeoutMs: 20_000 });
    const res = await upload(server, user.token, [fileOf(speech('wav')), { name: 'schedule_uuid', value: visit }]);
    assert.equal(res.status, 200, JSON.stringify(res.body));
  });

  test("downloads: another clinician's file and unknown uuids are 404; Range gives 206/416", async () => {
    const { user, visit } = await clinicianWithVisit(server);
    const other = await clinicianWithVisit(server);
    // Long enough for several 64 KiB frames.
    const file = tempFile('ranges.wav', Buffer.concat([fs.readFileSync(speech('wav')), Buffer.alloc(300_000, 3).map((_, i) => i % 251)]));
    const original = fs.readFileSync(file);
    const res = await upload(server, user.token, [fileOf(file), { name: 'schedule_uuid', value: visit }]);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const url: string = res.body.data.url;
    const foreign = await download(other.user.token, url);
    assert.deepEqual([foreign.status, (await foreign.json()).code], [404, 'not_found']);
    const unknown = await download(user.token, url.replace(res.body.data.uuid, crypto.randomUUID()));
    assert.equal(unknown.status, 404);
    assert.equal((await unknown.json()).status, false);
    const malformed = await download(user.token, url.replace(res.body.data.uuid, 'nope'));
    assert.deepEqual([malformed.status, (await malformed.json()).code], [404, 'not_found']);

    const size = original.length;
    const ranges: Array<[string, number, number]> = [
      ['bytes=0-99', 0, 99],
      ['bytes=65530-65545', 65530, 65545], // across a frame boundary
      ['bytes=131072-', 131072, size - 1],
      ['bytes=-1000', size - 1000, size - 1],
      [`bytes=100-${size + 5000}`, 100, size - 1],
    ];
    for (const [header, start, end] of ranges) {
      const r = await download(user.token, url, { range: header });
      assert.equal(r.status, 206, header);
      assert.equal(r.headers.get('content-range'), `bytes ${start}-${end}/${size}`, header);
      assert.ok(Buffer.from(await r.arrayBuffer()).equals(original.subarray(start, end + 1)), header);
    }
    const past = await download(user.token, url, { range: `bytes=${size}-` });
    assert.equal(past.status, 416);
    assert.equal(past.headers.get('content-range'), `bytes */${size}`);
    assert.equal((await past.json()).code, 'range_not_satisfiable');
  });

  test('encryption at rest: a canary planted in the audio is nowhere in the data dir; reads are audited', async () => {
    const { user, visit } = await clinicianWithVisit(server);
    const canary = Buffer.from('CANARY-7f3a9c-PHI-CANARY-7f3a9c');
    const file = tempFile('canary.wav', Buffer.concat([fs.readFileSync(speech('wav')), canary, Buffer.alloc(70_000, 0), canary]));
    const res = await upload(server, user.token, [fileOf(file), { name: 'schedule_uuid', value: visit }]);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    for (const f of filesUnder(server.dataDir)) {
      assert.equal(fs.readFileSync(f).indexOf(canary), -1, `canary found in ${path.relative(server.dataDir, f)}`);
    }
    assert.equal((await (await download(user.token, res.body.data.url)).arrayBuffer()).byteLength, fs.statSync(file).size);
    const audit = rowsOf(
      await server.runtime.services.unitOfWork.db.execute(
        sql`select action, outcome from audit_log where resource_type = 'audio_file' and resource_id = ${res.body.data.uuid} order by id`,
      ),
    );
    assert.deepEqual(audit.map((a) => `${a.action}:${a.outcome}`), ['create:success', 'read:success']);
  });

  test("deleting the account removes its audio rows (cascade) and, on the hourly cleanup, its stored objects", async () => {
    const { user, visit } = await clinicianWithVisit(server);
    const res = await upload(server, user.token, [fileOf(speech('mp3')), { name: 'schedule_uuid', value: visit }]);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const mine = path.join(server.dataDir, 'audio', 'objects', user.uuid);
    assert.equal(filesUnder(mine).length, 1);
    const del = await server.api('POST', '/delete-account', { token: user.token, body: { password: user.password } });
    assert.equal(del.status, 200, JSON.stringify(del.body));
    const db = server.runtime.services.unitOfWork.db;
    assert.equal(Number(rowsOf(await db.execute(sql`select count(*)::int as n from audio_files where user_id = ${user.uuid}`))[0]?.n), 0);
    const { cleanupExpired } = await import('../../../server/src/jobs/cleanup-expired.ts');
    await cleanupExpired(server.runtime.services, {}, undefined as never);
    assert.equal(filesUnder(mine).length, 0, 'the encrypted object is deleted too');
    assert.equal(Number(rowsOf(await db.execute(sql`select count(*)::int as n from audio_deletions`))[0]?.n), 0);
  });
});
