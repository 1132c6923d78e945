/**
 * `kill -9` under load (issue 15), small: a few clinicians work through visits (timer events,
 * mileage, SOAP notes, new visits, verification mails, dictations for the AI pipeline) over
 * REST with an Idempotency-Key per write, each with a sync socket that reconnects by itself.
 * Meanwhile the server process is killed with SIGKILL and restarted on the same port and data;
 * on PostgreSQL the job worker is a process of its own (`fieldchart worker`) and is killed too,
 * while a dictation job is inside its STT call. On the embedded database the server runs the
 * jobs, so its kill is also the worker's, and it too comes while a job is inside STT.
 *
 * After: every write a client got a 2xx for is in the database exactly once (a client-side
 * ledger checked by SQL), every job it enqueued ran to the end and none is left queued or
 * locked (the killed runs included: no 4-hour lock), and every device has been shown every
 * acknowledged timer event and every dictation completed.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { checkLedger, describeCheck, WriteLedger, type LedgerCheck } from '../../bench/support/write-ledger.ts';
import { keyedWrite, type Attempt } from '../../bench/support/keyed-write.ts';
import { LoadDevice, timerKey } from '../../bench/support/load-device.ts';
import { LoadNode } from '../../bench/support/load-nodes.ts';
import { openDatabase } from '../../server/src/db/database.ts';
import { backends, serverDataDir } from '../helpers/backends.ts';
import { eventually } from '../helpers/eventually.ts';
import { freePort } from '../helpers/processes.ts';
import { API, newAccount, RATE_LIMITS_OFF } from '../helpers/test-server.ts';
import { silentWav } from '../helpers/wav.ts';
import { startTimedSttStandIn } from './ai/pipeline/stt-stand-in.ts';

const CLINICIANS = 3;
/** Under ABANDONED_AFTER_MS (120 s): a write whose claim a killed node left is given up, not acknowledged. */
const RETRY_FOR_MS = 12_000;
const STT_MS = 1500;
const STEPS = ['start_travel', 'arrive', 'start_documentation', 'complete'] as const;
const WAIT = { timeoutMs: 60_000, intervalMs: 200 };

interface Clinician {
  readonly email: string;
  readonly token: string;
  readonly patient: string;
  visit: { uuid: string; step: number } | null;
  readonly device: LoadDevice;
  readonly timers: string[];
  readonly dictations: string[];
}

for (const backend of backends) {
  test(`kill -9 of the server and of the worker under load: nothing acknowledged lost, no job lost, devices reconcile [${backend.name}]`, { timeout: 180_000 }, async (t) => {
    const onPostgres = backend.name === 'postgres';
    const dataDir = await serverDataDir('fieldchart-kill9-', onPostgres);
    const db = onPostgres ? await backend.open() : null;
    const { stt, inFlight: inStt } = await startTimedSttStandIn(STT_MS);
    const port = await freePort();
    const origin = `http://127.0.0.1:${port}`;
    const env = {
      PORT: String(port),
      FIELDCHART_DATA_DIR: dataDir,
      DATABASE_URL: db?.url ?? undefined,
      LOG_LEVEL: 'warn',
      STT_URL: stt.url,
      ...RATE_LIMITS_OFF,
      OTP_SENDS_PER_EMAIL_PER_HOUR: '1000',
      OTP_SENDS_PER_ADDRESS_PER_HOUR: '100000',
      // On PostgreSQL the jobs run in a worker process of their own, killed on its own.
      ...(onPostgres ? { WORKER_ENABLED: 'false' } : {}),
    };
    const server = new LoadNode('server', env, origin);
    let worker = null as LoadNode | null;
    const clinicians: Clinician[] = [];
    let stop = false;
    after(async () => {
      stop = true;
      // Bounded: a failed run must still end its file.
      await Promise.race([Promise.all(clinicians.map((c) => c.device.close())), new Promise((r) => setTimeout(r, 10_000))]);
      if (server.alive()) await server.process.stop('SIGKILL');
      if (worker?.alive()) await worker.process.stop('SIGKILL');
      await stt.close();
      await db?.drop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    });
    await server.ready();
    // After the server: two processes creating a fresh data dir's key files at once race.
    if (onPostgres) {
      worker = new LoadNode('worker', env, origin);
      await worker.ready();
    }

    const ledger = new WriteLedger();
    const attempts: Attempt[] = [];
    const url = (p: string) => `${origin}${API}${p}`;
    /** Writes that ended without a 2xx, by label and status: what a failure message shows. */
    const refused = new Map<string, number>();
    const write = async <T = any>(label: string, method: 'POST' | 'PUT', p: string, token: string, body: unknown, form?: () => FormData) => {
      const r = await keyedWrite<T>({ url: url(p), label, method, token, body, ...(form ? { form } : {}), retryForMs: RETRY_FOR_MS, onAttempt: (a) => attempts.push(a) });
      if (!r.acknowledged) {
        const k = `${label} ${r.status} ${(r.body as { code?: string } | null)?.code ?? ''}`;
        refused.set(k, (refused.get(k) ?? 0) + 1);
      }
      return r;
    };
    const today = new Date().toISOString().slice(0, 10);
    let slot = 0;
    async function schedule(c: { token: string; patient: string }): Promise<{ uuid: string; step: number } | null> {
      slot++;
      const start_time = `${String(7 + (slot % 12)).padStart(2, '0')}:${String((slot * 7) % 60).padStart(2, '0')}`;
      const r = await write<any>('schedule', 'POST', '/schedule-visit-request-save', c.token, { patient_uuid: c.patient, visit_date: today, start_time });
      if (!r.acknowledged) return null;
      ledger.visit(r.body.data.uuid);
      return { uuid: r.body.data.uuid as string, step: 0 };
    }

    for (let i = 0; i < CLINICIANS; i++) {
      const account = newAccount();
      const reg = await write<any>('register', 'POST', '/register', '', account);
      assert.equal(reg.status, 200, JSON.stringify(reg.body));
      const token = reg.body.data.token as string;
      assert.equal((await write('settings', 'PUT', '/my-settings', token, { time_zone: 'UTC' })).status, 200);
      const patient = await write<any>('patient', 'POST', '/patient/create', token, { first_name: 'Kill', last_name: `Nine${i}` });
      assert.equal(patient.status, 200);
      const c: Clinician = {
        email: account.email,
        token,
        patient: patient.body.data.uuid,
        visit: null,
        device: new LoadDevice(url('/sync').replace(/^http/, 'ws'), () => token),
        timers: [],
        dictations: [],
      };
      c.visit = await schedule(c);
      assert.ok(c.visit, 'set-up schedules a visit');
      clinicians.push(c);
    }

    async function day(c: Clinician): Promise<void> {
      for (let round = 0; !stop; round++) {
        if (!c.visit) c.visit = await schedule(c);
        const v = c.visit;
        if (!v) continue;
        const step = STEPS[v.step] as (typeof STEPS)[number];
        const event_time = new Date().toISOString();
        const timer = await write('timer', 'POST', '/visit-timer-events', c.token, { schedule_uuid: v.uuid, events: [{ event_type: step, event_time, latitude: 41.925, longitude: -87.652, accuracy: 8 }] });
        if (!timer.acknowledged) {
          // Where the visit stands is unknown now: the clinician goes on with a new one.
          c.visit = null;
          continue;
        }
        ledger.timer({ visit: v.uuid, type: step, time: event_time });
        c.timers.push(timerKey(v.uuid, step, event_time));
        v.step++;
        const recorded_at = new Date().toISOString();
        const miles = 1 + round;
        const mileage = await write('mileage', 'PUT', `/visit/${v.uuid}/mileage`, c.token, { total_miles: miles, recorded_at });
        if (mileage.acknowledged) ledger.setMileage(v.uuid, miles, recorded_at);
        if (step === 'start_documentation') {
          const form = () => {
            const f = new FormData();
            f.append('schedule_uuid', v.uuid);
            f.append('discipline', 'PT');
            f.append('encounter_type', 'daily_note');
            f.append('audio', new Blob([new Uint8Array(silentWav(32_000))], { type: 'audio/wav' }), 'dictation.wav');
            return f;
          };
          const up = await write<any>('dictation', 'POST', '/ai/process-audio', c.token, undefined, form);
          if (up.acknowledged) {
            ledger.dictation(up.body.data.transcription_uuid);
            c.dictations.push(up.body.data.transcription_uuid);
          }
        }
        if (round % 3 === 0) {
          const mail = await write('send otp', 'POST', '/verify-email/send-otp', c.token, undefined);
          if (mail.acknowledged) ledger.mail(c.email);
        }
        if (v.step === STEPS.length) {
          const note = await write('note', 'POST', '/patient-referral-end-visit-note', c.token, {
            schedule_uuid: v.uuid,
            subjective: 'Less pain on stairs.',
            objective: 'Gait steady.',
            assessment: 'Progressing.',
            plan: 'Continue.',
          });
          if (note.acknowledged) ledger.note(v.uuid);
          c.visit = null;
        }
        await new Promise((r) => setTimeout(r, 50 + Math.random() * 100));
      }
    }
    const loops = clinicians.map((c) => day(c));

    /** Kills `node` while a dictation job is inside its STT call; answers the timings. */
    async function killMidJob(node: LoadNode) {
      const ledgerBefore = ledger.size;
      await eventually(() => assert.ok(ledger.size >= ledgerBefore + 6 && inStt() > 0, `acks ${ledger.size - ledgerBefore}, jobs in STT ${inStt()}, writes not acknowledged: ${JSON.stringify([...refused])}`), WAIT);
      const killedAt = performance.now();
      const jobsInStt = inStt();
      const timing = await node.killAndRestart();
      const firstAck = await eventually(() => {
        const a = attempts.find((x) => x.at > killedAt && x.status >= 200 && x.status < 300);
        assert.ok(a, 'a write acknowledged after the restart');
        return a.at + a.ms - killedAt;
      }, WAIT);
      t.diagnostic(`kill -9 ${node.kind} with ${jobsInStt} job(s) in STT: gone in ${timing.exitMs.toFixed(0)} ms, ready again ${timing.readyMs.toFixed(0)} ms after the kill; first 2xx ${firstAck.toFixed(0)} ms after`);
    }

    await killMidJob(server);
    if (worker) await killMidJob(worker);
    // A little more work after the last restart, then the day ends.
    const ackedAtEnd = ledger.size;
    await eventually(() => assert.ok(ledger.size >= ackedAtEnd + 6, `acks since the last restart: ${ledger.size - ackedAtEnd}; not acknowledged: ${JSON.stringify([...refused])}; server: ${server.process.stderr().slice(-1500)}`), WAIT);
    stop = true;
    await Promise.all(loops);
    assert.ok(ledger.audio.size >= 2 && ledger.timers.length >= 10, `enough was acknowledged: ${ledger.audio.size} dictations, ${ledger.timers.length} timer events`);

    // Devices: each has reconnected and has been shown its acknowledged timer events and its dictations completed.
    await eventually(() => {
      for (const c of clinicians) {
        assert.ok(c.device.connected, 'the device is connected again');
        assert.deepEqual(c.device.missing({ timers: c.timers, completed: c.dictations }), [], 'the device has everything acknowledged');
      }
    }, { timeoutMs: 90_000, intervalMs: 250 });
    for (const c of clinicians) assert.ok(c.device.connects >= 2, `device reconnected after the server's kill (${c.device.connects} connections)`);

    // The database: what the clients were told was written, exactly once; every job done, none left locked.
    const settled = (c: LedgerCheck) => c.unfinished.length === 0 && c.jobsLeft.length === 0;
    let check: LedgerCheck;
    if (onPostgres) {
      const database = await openDatabase({ kind: 'postgres', url: db?.url as string, poolSize: 2 });
      try {
        check = await eventually(async () => {
          const c = await checkLedger(database.db, ledger);
          assert.ok(settled(c), describeCheck(c));
          return c;
        }, WAIT);
      } finally {
        await database.close();
      }
    } else {
      // One process at a time on the data dir: the server (which runs the jobs) stops first.
      await eventually(async () => {
        await server.stop();
        const database = await openDatabase({ kind: 'pglite', dataDir: path.join(dataDir, 'pgdata') });
        try {
          check = await checkLedger(database.db, ledger);
        } finally {
          await database.close();
        }
        if (!settled(check)) {
          server.restartGracefully();
          await server.ready();
          assert.fail(describeCheck(check));
        }
      }, WAIT);
    }
    check = check!;
    t.diagnostic(describeCheck(check));
    assert.deepEqual(check.missing, [], 'every acknowledged write is in the database');
    assert.deepEqual(check.duplicated, [], 'none twice');
    assert.deepEqual(check.unfinished, [], 'every job ran to the end');
    assert.deepEqual(check.jobsLeft, [], 'no job left queued or locked');
    assert.ok(check.rerunJobs >= 1, 'a dictation job killed mid-run ran again after the restart');
    await worker?.stop();
  });
}
