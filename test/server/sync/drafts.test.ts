/**
 * Draft SOAP notes as Yjs documents (docs/sync-protocol.md, "Drafts (Yjs)" and "Several
 * nodes"), on every backend. The devices here run real Y.Docs and y-protocols against the
 * drafts module the way a socket would carry them; a second `createDrafts` on the same
 * database is another node, fed by real LISTEN on `fieldchart_draft`.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'drizzle-orm';
import fc from 'fast-check';
import * as decoding from 'lib0/decoding';
import * as encoding from 'lib0/encoding';
import { readSyncMessage, writeSyncStep1, writeUpdate } from 'y-protocols/sync';
import * as Y from 'yjs';
import type { ServerMessage } from '@fieldchart/schema/sync';
import { rowsOf } from '../../../server/src/db/database.ts';
import { COMPACT_ABOVE, createDrafts, DRAFT_CHANNEL, type DraftPeer, type Drafts } from '../../../server/src/sync/drafts.ts';
import { createDraftStore } from '../../../server/src/services/sync/drafts-store.ts';
import { forEachBackend } from '../../helpers/backends.ts';
import { eventually } from '../../helpers/eventually.ts';
import { registerUser, startTestServer, type TestServer } from '../../helpers/test-server.ts';
import { scheduleVisit, type User } from '../visits/visit-fixtures.ts';

const SECTIONS = ['subjective', 'objective', 'assessment', 'plan'] as const;
type Section = (typeof SECTIONS)[number];
type DocError = Extract<ServerMessage, { type: 'doc_error' }>;

/** The device's record of what came from the server: not echoed back. */
const SERVER = Symbol('server');
const nameOf = (visitId: string) => `visit/${visitId}/soap`;
const base64 = (e: encoding.Encoder) => Buffer.from(encoding.toUint8Array(e)).toString('base64');
const sectionsOf = (doc: Y.Doc) => Object.fromEntries(SECTIONS.map((s) => [s, doc.getText(s).toString()]));

/**
 * Every operation in flight between devices, nodes and the database. Tests wait for it to
 * drain instead of sleeping; a rejection (a database failure) is kept and fails the test.
 */
class Inflight {
  private readonly work = new Set<Promise<unknown>>();
  readonly failures: unknown[] = [];
  track(p: Promise<unknown>): void {
    const t: Promise<unknown> = p
      .catch((err: unknown) => {
        this.failures.push(err);
      })
      .finally(() => this.work.delete(t));
    this.work.add(t);
  }
  async drain(): Promise<void> {
    while (this.work.size > 0) await Promise.all([...this.work]);
    assert.deepEqual(this.failures, []);
  }
}

/** A phone with the note screen: its own Y.Doc, synced over y-protocols when online. */
class Device {
  readonly doc = new Y.Doc();
  readonly errors: DocError[] = [];
  readonly received: string[] = [];
  /** The socket of the current connection: each connect is a new socket, as on the wire. */
  peer: DraftPeer;
  online = false;

  constructor(
    readonly node: Drafts,
    private readonly userId: string,
    readonly docName: string,
    private readonly inflight: Inflight,
  ) {
    this.peer = this.socket();
    this.doc.on('update', (update: Uint8Array, origin: unknown) => {
      if (origin === SERVER || !this.online) return;
      const e = encoding.createEncoder();
      writeUpdate(e, update);
      this.toServer(base64(e));
    });
  }

  private socket(): DraftPeer {
    const peer: DraftPeer = {
      userId: this.userId,
      // What reaches a closed socket is lost, as on the wire.
      send: (m) => {
        if (this.online && this.peer === peer) this.fromServer(m);
      },
    };
    return peer;
  }

  /** Like a socket: in order, never re-entrant, the hub not waiting for one before the next. */
  toServer(message: string): void {
    const peer = this.peer;
    this.inflight.track(
      Promise.resolve().then(() => {
        // The hub stops reading a socket once it detached it.
        if (this.online && this.peer === peer) return this.node.receive(peer, this.docName, message);
      }),
    );
  }

  /** doc_open, then the device's own step 1, as a y-protocols provider does on connect. */
  connect(): void {
    this.online = true;
    this.peer = this.socket();
    this.inflight.track(this.node.open(this.peer, this.docName));
    const e = encoding.createEncoder();
    writeSyncStep1(e, this.doc);
    this.toServer(base64(e));
  }

  disconnect(): void {
    this.online = false;
    this.node.detach(this.peer);
  }

  private fromServer(m: ServerMessage): void {
    if (m.type === 'doc_error') {
      this.errors.push(m);
      return;
    }
    assert.equal(m.type, 'doc');
    assert.equal(m.doc, this.docName);
    this.received.push(m.message);
    const reply = encoding.createEncoder();
    readSyncMessage(decoding.createDecoder(Buffer.from(m.message, 'base64')), reply, this.doc, SERVER);
    if (encoding.length(reply) > 0) this.toServer(base64(reply));
  }

  type(section: Section, index: number, text: string): void {
    const t = this.doc.getText(section);
    t.insert(Math.min(index, t.length), text);
  }

  erase(section: Section, index: number, length: number): void {
    const t = this.doc.getText(section);
    const at = Math.min(index, t.length);
    t.delete(at, Math.min(length, t.length - at));
  }
}

forEachBackend('sync: drafts', (backend) => {
  let server: TestServer;
  let notices: string[];
  let nodes: Drafts[];
  let inflight: Inflight;
  let unlisten: () => Promise<void>;
  // Set by a test that wants to hold notifications back and deliver them itself.
  let holdNotices = false;
  const held: string[] = [];
  const log = { warn: () => {}, error: () => {} };

  before(async () => {
    server = await startTestServer(backend);
    const onNotice = (payload: string) => {
      notices.push(payload);
      if (holdNotices) held.push(payload);
      else for (const node of nodes) inflight.track(node.onNotification(payload));
    };
    const { database } = server.runtime;
    if (database.pglite) {
      unlisten = await database.pglite.listen(DRAFT_CHANNEL, onNotice);
    } else {
      const sqlClient = database.sql;
      assert.ok(sqlClient);
      const meta = await sqlClient.listen(DRAFT_CHANNEL, onNotice);
      unlisten = () => meta.unlisten();
    }
  });
  after(async () => {
    await unlisten();
    await server.close();
  });

  const db = () => server.runtime.database.db;
  const node = (nodeId: string) => {
    const drafts = createDrafts({ db: db(), phi: server.runtime.services.phi, nodeId, log });
    nodes.push(drafts);
    return drafts;
  };
  const reset = () => {
    notices = [];
    nodes = [];
    inflight = new Inflight();
    holdNotices = false;
    held.length = 0;
  };

  let day = 0;
  async function newVisit(u: User): Promise<string> {
    day = (day + 1) % 28;
    return scheduleVisit(server, u, { visit_date: `2026-11-${String(day + 1).padStart(2, '0')}`, start_time: '09:00', address: '5 Elm St' });
  }
  const storedRows = async (visitId: string) =>
    rowsOf<{ id: string | number; update_enc: string; owner_id: string }>(
      await db().execute(sql`select id, update_enc, owner_id from draft_updates where visit_id = ${visitId} order by id`),
    );
  const dbSections = (visitId: string, ownerId: string) => db().transaction((tx) => nodes[0]!.sectionsOf(tx, visitId, ownerId));

  test('two devices edit offline, then sync: both converge and the stored draft is their text', async () => {
    reset();
    const u = await registerUser(server);
    const visitId = await newVisit(u);
    const a = node('node-a');
    assert.equal(await dbSections(visitId, u.uuid), null, 'no draft yet');

    const phone = new Device(a, u.uuid, nameOf(visitId), inflight);
    const tablet = new Device(a, u.uuid, nameOf(visitId), inflight);
    phone.type('subjective', 0, 'Reports less knee pain on stairs.');
    phone.type('plan', 0, 'Continue HEP.');
    tablet.type('subjective', 0, 'Slept well. ');
    tablet.type('objective', 0, 'Gait steady with cane.');

    phone.connect();
    await inflight.drain();
    tablet.connect();
    await inflight.drain();
    // The phone was online while the tablet synced: it got the tablet's edits by fan-out.
    assert.deepEqual(sectionsOf(phone.doc), sectionsOf(tablet.doc));
    const text = sectionsOf(phone.doc);
    assert.match(text.subjective ?? '', /Reports less knee pain on stairs\./);
    assert.match(text.subjective ?? '', /Slept well\. /);
    assert.equal(text.objective, 'Gait steady with cane.');
    assert.equal(text.plan, 'Continue HEP.');
    assert.deepEqual(await dbSections(visitId, u.uuid), { assessment: '', ...text });

    // Live edits: one keystroke reaches the other device and the table.
    tablet.type('assessment', 0, 'Progressing.');
    await inflight.drain();
    assert.equal(phone.doc.getText('assessment').toString(), 'Progressing.');
    assert.equal((await dbSections(visitId, u.uuid))?.assessment, 'Progressing.');

    // Offline again on both, more edits, reconnect: still one text, nothing lost.
    phone.disconnect();
    tablet.disconnect();
    phone.erase('plan', 0, 'Continue '.length);
    tablet.type('plan', 'Continue HEP.'.length, ' Next visit Friday.');
    tablet.connect();
    phone.connect();
    await inflight.drain();
    assert.deepEqual(sectionsOf(phone.doc), sectionsOf(tablet.doc));
    assert.equal(phone.doc.getText('plan').toString(), 'HEP. Next visit Friday.');
    assert.deepEqual(await dbSections(visitId, u.uuid), sectionsOf(phone.doc));

    // A device that never had the draft gets all of it.
    const fresh = new Device(a, u.uuid, nameOf(visitId), inflight);
    fresh.connect();
    await inflight.drain();
    assert.deepEqual(sectionsOf(fresh.doc), sectionsOf(phone.doc));
    for (const d of [phone, tablet, fresh]) assert.deepEqual(d.errors, []);

    // PHI at rest: sealed under the key ring, bound to the row, no clear text or base64 of it.
    const rows = await storedRows(visitId);
    assert.ok(rows.length > 0);
    for (const row of rows) {
      assert.match(row.update_enc, /^fc1\./);
      assert.equal(row.owner_id, u.uuid);
      for (const needle of ['knee', 'HEP', 'Gait']) {
        assert.ok(!row.update_enc.includes(needle));
        assert.ok(!Buffer.from(row.update_enc, 'base64').toString('latin1').includes(needle));
      }
      assert.throws(() => server.runtime.services.phi.open(row.update_enc, 'draft_updates', 'update_enc', String(Number(row.id) + 1)));
    }
  });

  test('a reconnect that brings nothing new stores nothing', async () => {
    reset();
    const u = await registerUser(server);
    const visitId = await newVisit(u);
    const phone = new Device(node('node-a'), u.uuid, nameOf(visitId), inflight);
    phone.type('subjective', 0, 'abc');
    phone.erase('subjective', 1, 1);
    phone.connect();
    await inflight.drain();
    const before = (await storedRows(visitId)).length;
    phone.disconnect();
    phone.connect();
    await inflight.drain();
    assert.equal((await storedRows(visitId)).length, before);
    assert.equal(phone.doc.getText('subjective').toString(), 'ac');
  });

  test('a second node follows through fieldchart_draft notifications; each node ignores its own', async () => {
    reset();
    const u = await registerUser(server);
    const visitId = await newVisit(u);
    const a = node('node-a');
    const b = node('node-b');
    const onA = new Device(a, u.uuid, nameOf(visitId), inflight);
    const onB = new Device(b, u.uuid, nameOf(visitId), inflight);
    onA.type('subjective', 0, 'Offline on A. ');
    onB.type('objective', 0, 'Offline on B.');
    onA.connect();
    onB.connect();
    await inflight.drain();
    onA.type('plan', 0, 'Typed live on A.');
    await inflight.drain();
    onB.type('assessment', 0, 'Typed live on B.');

    // Notifications come through LISTEN asynchronously: retry until both devices agree.
    await eventually(async () => {
      await inflight.drain();
      assert.deepEqual(sectionsOf(onA.doc), {
        subjective: 'Offline on A. ',
        objective: 'Offline on B.',
        assessment: 'Typed live on B.',
        plan: 'Typed live on A.',
      });
      assert.deepEqual(sectionsOf(onB.doc), sectionsOf(onA.doc));
    });
    assert.deepEqual(await dbSections(visitId, u.uuid), sectionsOf(onA.doc));

    // Every stored update was announced with its id, the visit and the node that stored it.
    const parsed = notices.map((n) => JSON.parse(n) as { node: string; id: number; visit: string });
    const ids = (await storedRows(visitId)).map((r) => Number(r.id));
    assert.deepEqual(parsed.map((p) => p.id).sort((x, y) => x - y), ids);
    assert.ok(parsed.every((p) => p.visit === visitId && ['node-a', 'node-b'].includes(p.node)));
    assert.ok(!notices.some((n) => n.includes('Offline')));

    // A notification naming the receiving node is ignored there (that node applied the update
    // when it stored it); the same notification from another node is applied.
    holdNotices = true;
    onB.type('plan', 0, 'Held back. ');
    await eventually(async () => {
      await inflight.drain();
      assert.equal(held.length, 1);
    });
    const notice = JSON.parse(held[0]!) as { node: string };
    assert.equal(notice.node, 'node-b');
    await a.onNotification(JSON.stringify({ ...notice, node: 'node-a' }));
    assert.equal(onA.doc.getText('plan').toString(), 'Typed live on A.');
    await a.onNotification(held[0]!);
    assert.equal(onA.doc.getText('plan').toString(), 'Held back. Typed live on A.');
    // Junk and notices for docs nobody here has open are dropped without a query failing.
    await a.onNotification('not json');
    await a.onNotification(JSON.stringify({ node: 'node-z', id: 1e12, visit: crypto.randomUUID() }));
  });

  test('not found: a foreign, missing, deleted or malformed visit, and a doc the socket has not opened', async () => {
    reset();
    const owner = await registerUser(server);
    const other = await registerUser(server);
    const visitId = await newVisit(owner);
    const a = node('node-a');
    const mine = new Device(a, owner.uuid, nameOf(visitId), inflight);
    mine.type('subjective', 0, 'Private.');
    mine.connect();
    await inflight.drain();

    const intruder = new Device(a, other.uuid, nameOf(visitId), inflight);
    const missing = new Device(a, other.uuid, nameOf(crypto.randomUUID()), inflight);
    const malformed = new Device(a, other.uuid, 'visit/not-a-uuid/soap', inflight);
    for (const d of [intruder, missing, malformed]) d.connect();
    await inflight.drain();
    for (const d of [intruder, missing, malformed]) {
      // doc_open and the step 1 behind it: the same answer, whether the visit exists or not.
      assert.deepEqual(
        d.errors.map((e) => [e.code, e.message]),
        [
          ['not_found', 'Visit not found'],
          ['not_found', 'Visit not found'],
        ],
      );
      assert.deepEqual(d.received, []);
    }
    assert.equal(intruder.doc.getText('subjective').toString(), '');
    // The intruder's edit after the refusals: refused too, nothing stored for it.
    intruder.type('subjective', 0, 'Injected.');
    await inflight.drain();
    assert.equal(intruder.errors.length, 3);
    assert.equal((await dbSections(visitId, owner.uuid))?.subjective, 'Private.');
    assert.equal(await dbSections(visitId, other.uuid), null);
    assert.ok((await storedRows(visitId)).every((r) => r.owner_id === owner.uuid));

    // Open on one doc does not open another; after doc_close, messages are refused.
    const e = encoding.createEncoder();
    writeSyncStep1(e, new Y.Doc());
    const otherVisit = await newVisit(owner);
    const errors: DocError[] = [];
    const peer: DraftPeer = { userId: owner.uuid, send: (m) => m.type === 'doc_error' && errors.push(m) };
    await a.receive(peer, nameOf(otherVisit), base64(e));
    await a.open(peer, nameOf(visitId));
    a.close(peer, nameOf(visitId));
    await a.receive(peer, nameOf(visitId), base64(e));
    assert.deepEqual(errors.map((x) => x.code), ['not_found', 'not_found']);

    // A visit deleted while open: the next update is refused and the doc closed for it.
    await db().execute(sql`update visits set deleted_at = now() where id = ${visitId}`);
    mine.type('plan', 0, 'After deletion.');
    await inflight.drain();
    assert.deepEqual(mine.errors.map((x) => x.code), ['not_found']);
    assert.equal((await dbSections(visitId, owner.uuid))?.plan, '');
    const late = new Device(a, owner.uuid, nameOf(visitId), inflight);
    late.connect();
    await inflight.drain();
    assert.deepEqual(late.errors.map((x) => x.code), ['not_found', 'not_found']);
  });

  test('invalid bytes answer invalid_update, oversize too_large; nothing is stored and the doc stays usable', async () => {
    reset();
    const u = await registerUser(server);
    const visitId = await newVisit(u);
    const a = node('node-a');
    const phone = new Device(a, u.uuid, nameOf(visitId), inflight);
    phone.connect();
    await inflight.drain();

    const frame = (type: number, payload: Uint8Array) => {
      const e = encoding.createEncoder();
      encoding.writeVarUint(e, type);
      encoding.writeVarUint8Array(e, payload);
      return encoding.toUint8Array(e);
    };
    const b64 = (bytes: Uint8Array | number[]) => Buffer.from(Uint8Array.from(bytes)).toString('base64');
    const bad = [
      '', // no message type
      '!!!!', // not base64
      'AAEC=', // base64 of the wrong length
      b64([7, 0]), // unknown message type
      b64([2, 5, 1, 2]), // payload shorter than its length
      b64(frame(2, Uint8Array.from([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]))), // garbled update
      b64(frame(2, Uint8Array.from([1, 1, 5, 0, 4, 1]))), // an update cut short
      b64([...frame(2, Uint8Array.from([0, 0])), 9]), // trailing bytes
      b64(frame(0, Uint8Array.from([3, 1]))), // a state vector cut short
    ];
    for (const message of bad) await a.receive(phone.peer, phone.docName, message);
    assert.deepEqual(phone.errors.map((e) => e.code), bad.map(() => 'invalid_update'));

    const big = new Y.Doc();
    big.getText('plan').insert(0, 'x'.repeat(1024 * 1024 + 1));
    await a.receive(phone.peer, phone.docName, b64(frame(2, Y.encodeStateAsUpdate(big))));
    await a.receive(phone.peer, phone.docName, 'A'.repeat(2 * 1024 * 1024));
    assert.deepEqual(phone.errors.slice(bad.length).map((e) => e.code), ['too_large', 'too_large']);
    assert.equal((await storedRows(visitId)).length, 0);

    phone.type('plan', 0, 'Still works.');
    await inflight.drain();
    assert.equal((await dbSections(visitId, u.uuid))?.plan, 'Still works.');
  });

  test(`compaction: more than ${COMPACT_ABOVE} updates become one row with the same text; a node that missed them catches up`, async () => {
    reset();
    const u = await registerUser(server);
    const visitId = await newVisit(u);
    const a = node('node-a');
    const b = node('node-b');
    const writer = new Device(a, u.uuid, nameOf(visitId), inflight);
    const reader = new Device(b, u.uuid, nameOf(visitId), inflight);
    writer.connect();
    reader.connect();
    await inflight.drain();

    // Node B hears nothing until the rows it would be told about have been merged away.
    holdNotices = true;
    const words = 'Patient ambulated 150 ft with rolling walker, contact guard assist. '.split('');
    for (let i = 0; i < COMPACT_ABOVE + 20; i++) {
      const ch = words[i % words.length] ?? '.';
      if (i % 17 === 16) writer.erase('objective', 0, 1);
      else writer.type('objective', writer.doc.getText('objective').length, ch);
      await inflight.drain(); // one stored row per keystroke, as a live editor sends them
    }
    const expected = writer.doc.getText('objective').toString();
    const rows = await storedRows(visitId);
    assert.ok(rows.length < 30, `compacted to ${rows.length} rows`);
    assert.equal((await dbSections(visitId, u.uuid))?.objective, expected);

    // Most announced rows are gone: node B finds the merged row instead.
    const left = new Set((await storedRows(visitId)).map((r) => Number(r.id)));
    assert.ok(held.filter((n) => !left.has((JSON.parse(n) as { id: number }).id)).length > COMPACT_ABOVE);
    holdNotices = false;
    for (const n of held) inflight.track(b.onNotification(n));
    await inflight.drain();
    assert.equal(reader.doc.getText('objective').toString(), expected);

    const fresh = new Device(b, u.uuid, nameOf(visitId), inflight);
    fresh.connect();
    await inflight.drain();
    assert.equal(fresh.doc.getText('objective').toString(), expected);
    for (const row of await storedRows(visitId)) assert.ok(!row.update_enc.includes('walker'));
  });

  test('compaction on two nodes at once: the advisory lock makes them take turns; one row, same text', async () => {
    reset();
    const u = await registerUser(server);
    const visitId = await newVisit(u);
    const store = (nodeId: string) => createDraftStore({ db: db(), phi: server.runtime.services.phi, nodeId, log });
    const [a, b] = [store('node-a'), store('node-b')];
    const doc = new Y.Doc();
    const updates: Uint8Array[] = [];
    doc.on('update', (update: Uint8Array) => updates.push(update));
    for (let i = 0; i < COMPACT_ABOVE + 5; i++) doc.getText('plan').insert(i, String(i % 10));
    for (const [i, update] of updates.entries()) assert.notEqual(await (i % 2 ? a : b).append(visitId, u.uuid, update), null);
    assert.equal((await storedRows(visitId)).length, COMPACT_ABOVE + 5);
    const left = await Promise.all([a.compact(visitId), b.compact(visitId), a.compact(visitId)]);
    assert.deepEqual(left, [1, 1, 1]);
    assert.equal((await storedRows(visitId)).length, 1);
    assert.equal((await db().transaction((tx) => a.sectionsOf(tx, visitId, u.uuid)))?.plan, doc.getText('plan').toString());
    // Below the threshold nothing is merged.
    await a.append(visitId, u.uuid, Y.encodeStateAsUpdate(doc));
    assert.equal(await a.compact(visitId), 2);
  });

  test('property: random concurrent edits on 2–3 devices across two nodes, online and offline, converge to the stored draft', async () => {
    const edit = fc.record({
      device: fc.nat(2),
      section: fc.constantFrom(...SECTIONS),
      at: fc.nat(40),
      op: fc.oneof(
        fc.record({ kind: fc.constant('type' as const), text: fc.string({ minLength: 1, maxLength: 6 }) }),
        fc.record({ kind: fc.constant('erase' as const), length: fc.integer({ min: 1, max: 5 }) }),
        fc.record({ kind: fc.constant('toggle' as const) }),
        fc.record({ kind: fc.constant('settle' as const) }),
      ),
    });
    const scenario = fc.record({
      devices: fc.integer({ min: 2, max: 3 }),
      nodeOf: fc.array(fc.boolean(), { minLength: 3, maxLength: 3 }),
      startOnline: fc.array(fc.boolean(), { minLength: 3, maxLength: 3 }),
      edits: fc.array(edit, { minLength: 1, maxLength: 40 }),
    });
    const u = await registerUser(server);
    // A failure prints its seed and path; FC_SEED=… FC_PATH=… npm test -- sync/drafts replays it.
    const replay = process.env.FC_SEED ? { seed: Number(process.env.FC_SEED), path: process.env.FC_PATH } : {};

    await fc.assert(
      fc.asyncProperty(scenario, async (s) => {
        reset();
        const visitId = await newVisit(u);
        const nodePair = [node('node-a'), node('node-b')];
        const devices = Array.from(
          { length: s.devices },
          (_, i) => new Device(nodePair[s.nodeOf[i] ? 1 : 0]!, u.uuid, nameOf(visitId), inflight),
        );
        devices.forEach((d, i) => s.startOnline[i] && d.connect());
        for (const e of s.edits) {
          const d = devices[e.device % devices.length]!;
          if (e.op.kind === 'type') d.type(e.section, e.at, e.op.text);
          else if (e.op.kind === 'erase') d.erase(e.section, e.at, e.op.length);
          else if (e.op.kind === 'toggle') d.online ? d.disconnect() : d.connect();
          else await inflight.drain();
        }
        for (const d of devices) if (!d.online) d.connect();
        await eventually(async () => {
          await inflight.drain();
          const first = sectionsOf(devices[0]!.doc);
          for (const d of devices) assert.deepEqual(sectionsOf(d.doc), first);
        });
        const text = sectionsOf(devices[0]!.doc);
        const stored = await dbSections(visitId, u.uuid);
        if (stored) assert.deepEqual(stored, text);
        else assert.ok(Object.values(text).every((t) => t === ''));
        for (const d of devices) {
          assert.deepEqual(d.errors, []);
          d.disconnect();
        }
      }),
      { numRuns: backend.name === 'pglite' ? 25 : 15, ...replay },
    );
  });
});
