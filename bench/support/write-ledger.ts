/**
 * The client side's record of what the server acknowledged (a 2xx), and the check of it
 * against the database after faults (issue 15): every acknowledged write present exactly once,
 * every job it enqueued finished, no job left queued or locked. Shared by bench/load-day.ts
 * (FAULTS=…) and test/server/kill9-under-load.test.ts.
 *
 * The check reads the database itself (not the API): on PostgreSQL while the server runs, on
 * the embedded database after the server stopped (the data dir is one process's at a time).
 */
import { sql, type SQL } from 'drizzle-orm';
import { rowsOf, type Db } from '../../server/src/db/database.ts';

export interface TimerWrite {
  readonly visit: string;
  readonly type: string;
  /** event_time as the client sent it. */
  readonly time: string;
}

/** What the clients were told was written: one entry per 2xx, retries with the same key included once. */
export class WriteLedger {
  readonly visits = new Set<string>();
  readonly timers: TimerWrite[] = [];
  /** Per visit, the acknowledged mileage with the latest recorded_at (last writer wins by it). */
  readonly mileage = new Map<string, { miles: number; recordedAt: string }>();
  readonly notes = new Set<string>();
  /** Per address, how many verification mails were acknowledged (each one is a send_mail job). */
  readonly mails = new Map<string, number>();
  /** Acknowledged dictations (each one is an ai_process_audio job). */
  readonly audio = new Set<string>();

  visit(id: string): void {
    this.visits.add(id);
  }
  timer(w: TimerWrite): void {
    this.timers.push(w);
  }
  setMileage(visit: string, miles: number, recordedAt: string): void {
    const prev = this.mileage.get(visit);
    if (!prev || Date.parse(prev.recordedAt) <= Date.parse(recordedAt)) this.mileage.set(visit, { miles, recordedAt });
  }
  note(visit: string): void {
    this.notes.add(visit);
  }
  mail(address: string): void {
    this.mails.set(address, (this.mails.get(address) ?? 0) + 1);
  }
  dictation(transcription: string): void {
    this.audio.add(transcription);
  }
  get size(): number {
    let mails = 0;
    for (const n of this.mails.values()) mails += n;
    return this.visits.size + this.timers.length + this.mileage.size + this.notes.size + mails + this.audio.size;
  }
}

export interface LedgerCheck {
  /** Acknowledged writes looked up, by kind. */
  readonly checked: { visits: number; timers: number; mileage: number; notes: number; mails: number; audio: number };
  /** Acknowledged but absent (or, for mileage, older than acknowledged): must be empty. */
  readonly missing: string[];
  /** Present more than once: must be empty. */
  readonly duplicated: string[];
  /** Rows of the clinicians' visits no client was told of (a write committed whose answer the kill swallowed, and that its client gave up on or wrote again after its key's claim was abandoned). */
  readonly unacknowledgedVisits: number;
  readonly unacknowledgedTimers: number;
  /** Mails of acknowledged sends not sent, dictations not completed: jobs not (yet) done. */
  readonly unfinished: string[];
  /** Jobs of these tasks still in graphile_worker's table (queued, locked or failed for good). */
  readonly jobsLeft: Array<{ task: string; attempts: number; maxAttempts: number; locked: boolean; lastError: boolean }>;
  /** Dictations whose job ran more than once (a run died with its process and was run again). */
  readonly rerunJobs: number;
}

const TASKS = ['send_mail', 'ai_process_audio'];

async function rows<T>(db: Db, query: SQL): Promise<T[]> {
  return rowsOf<T>(await db.execute(query));
}

const uuidArray = (ids: Iterable<string>) => sql`${`{${[...ids].join(',')}}`}::uuid[]`;
const textArray = (xs: Iterable<string>) => sql`${`{${[...xs].map((x) => `"${x.replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`).join(',')}}`}::text[]`;

/** Looks every acknowledged write up in the database; answers what is missing, doubled or unfinished. */
export async function checkLedger(db: Db, ledger: WriteLedger): Promise<LedgerCheck> {
  const missing: string[] = [];
  const duplicated: string[] = [];
  const unfinished: string[] = [];

  const visitRows = await rows<{ id: string }>(db, sql`select id::text as id from visits where id = any(${uuidArray(ledger.visits)})`);
  const present = new Set(visitRows.map((r) => r.id));
  for (const v of ledger.visits) if (!present.has(v)) missing.push(`visit ${v}`);
  const [orphans] = await rows<{ n: number }>(
    db,
    sql`select count(*)::int as n from visits where owner_id in (select owner_id from visits where id = any(${uuidArray(ledger.visits)})) and id <> all(${uuidArray(ledger.visits)})`,
  );

  const timerVisits = new Set(ledger.timers.map((t) => t.visit));
  const timerRows = await rows<{ visit: string; type: string; ms: string; n: number }>(
    db,
    sql`select visit_id::text as visit, event_type as type, (extract(epoch from event_time) * 1000)::bigint::text as ms, count(*)::int as n
        from timer_events where visit_id = any(${uuidArray(timerVisits)}) group by 1, 2, 3`,
  );
  const timerKey = (visit: string, type: string, ms: number) => `${visit}/${type}/${ms}`;
  const timerCounts = new Map(timerRows.map((r) => [timerKey(r.visit, r.type, Number(r.ms)), r.n]));
  const ackedTimers = new Set<string>();
  for (const t of ledger.timers) {
    const k = timerKey(t.visit, t.type, Date.parse(t.time));
    ackedTimers.add(k);
    const n = timerCounts.get(k) ?? 0;
    if (n === 0) missing.push(`timer event ${k}`);
    if (n > 1) duplicated.push(`timer event ${k} ×${n}`);
  }
  // Two events of one type on one visit would be a replayed step, whatever their times.
  const perType = new Map<string, number>();
  for (const r of timerRows) perType.set(`${r.visit}/${r.type}`, (perType.get(`${r.visit}/${r.type}`) ?? 0) + r.n);
  for (const [k, n] of perType) if (n > 1) duplicated.push(`timer step ${k} ×${n}`);
  const unacknowledgedTimers = [...timerCounts.keys()].filter((k) => !ackedTimers.has(k)).length;

  const mileageRows = await rows<{ visit: string; miles: number; ms: string }>(
    db,
    sql`select visit_id::text as visit, total_miles::float8 as miles, (extract(epoch from recorded_at) * 1000)::bigint::text as ms
        from visit_mileage where visit_id = any(${uuidArray(ledger.mileage.keys())})`,
  );
  const mileageOf = new Map(mileageRows.map((r) => [r.visit, r]));
  for (const [visit, m] of ledger.mileage) {
    const row = mileageOf.get(visit);
    const ackedMs = Date.parse(m.recordedAt);
    // A later write whose answer was lost may have won since; an older one never may.
    if (!row || Number(row.ms) < ackedMs || (Number(row.ms) === ackedMs && Number(row.miles) !== m.miles)) missing.push(`mileage of ${visit}`);
  }

  const noteRows = await rows<{ visit: string; n: number }>(
    db,
    sql`select visit_id::text as visit, count(*)::int as n from soap_notes where visit_id = any(${uuidArray(ledger.notes)}) group by 1`,
  );
  const notesOf = new Map(noteRows.map((r) => [r.visit, r.n]));
  for (const v of ledger.notes) {
    const n = notesOf.get(v) ?? 0;
    if (n === 0) missing.push(`note of ${v}`);
    if (n > 1) duplicated.push(`note of ${v} ×${n}`);
  }

  const mailRows = await rows<{ address: string; n: number; sent: number }>(
    db,
    sql`select to_address as address, count(*)::int as n, (count(*) filter (where status = 'sent'))::int as sent
        from mail_outbox where kind = 'email_verification_code' and to_address = any(${textArray(ledger.mails.keys())}) group by 1`,
  );
  const mailsOf = new Map(mailRows.map((r) => [r.address, r]));
  let mailsChecked = 0;
  for (const [address, acked] of ledger.mails) {
    mailsChecked += acked;
    const r = mailsOf.get(address);
    // More rows than acknowledgements: sends committed whose answers were lost (never fewer).
    if (!r || r.n < acked) missing.push(`${acked - (r?.n ?? 0)} verification mail(s)`);
    if (r && r.sent < r.n) unfinished.push(`${r.n - r.sent} verification mail(s) not sent`);
  }

  const audioRows = await rows<{ id: string; status: string; attempts: number }>(
    db,
    sql`select id::text as id, status, attempts from ai_transcriptions where id = any(${uuidArray(ledger.audio)})`,
  );
  const audioOf = new Map(audioRows.map((r) => [r.id, r]));
  for (const id of ledger.audio) {
    const r = audioOf.get(id);
    if (!r) missing.push(`dictation ${id}`);
    else if (r.status !== 'completed') unfinished.push(`dictation ${id} ${r.status}`);
  }
  const rerunJobs = audioRows.filter((r) => r.attempts > 1).length;

  const jobsLeft = (
    await rows<{ task: string; attempts: number; max_attempts: number; locked: boolean; last_error: boolean }>(
      db,
      sql`select task_identifier as task, attempts, max_attempts, locked_at is not null as locked, last_error is not null as last_error
          from graphile_worker.jobs where task_identifier = any(${textArray(TASKS)})`,
    )
  ).map((j) => ({ task: j.task, attempts: j.attempts, maxAttempts: j.max_attempts, locked: j.locked, lastError: j.last_error }));

  return {
    checked: { visits: ledger.visits.size, timers: ledger.timers.length, mileage: ledger.mileage.size, notes: ledger.notes.size, mails: mailsChecked, audio: ledger.audio.size },
    missing,
    duplicated,
    unacknowledgedVisits: orphans?.n ?? 0,
    unacknowledgedTimers,
    unfinished,
    jobsLeft,
    rerunJobs,
  };
}

/** One line for a report. */
export function describeCheck(c: LedgerCheck): string {
  const k = c.checked;
  return (
    `acknowledged writes checked: ${k.visits} visits, ${k.timers} timer events, ${k.mileage} mileage, ${k.notes} notes, ${k.mails} mails, ${k.audio} dictations; ` +
    `missing ${c.missing.length}, doubled ${c.duplicated.length}, jobs unfinished ${c.unfinished.length}, jobs left in the queue ${c.jobsLeft.length} ` +
    `(${c.jobsLeft.filter((j) => j.locked).length} locked); dictation jobs run again after a kill: ${c.rerunJobs}; ` +
    `rows no client was acknowledged: ${c.unacknowledgedVisits} visits, ${c.unacknowledgedTimers} timer events`
  );
}
