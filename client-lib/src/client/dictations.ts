/**
 * `client.dictations`: recordings kept on the device (dictation-store.ts) and sent by the
 * dictation uploader, which runs beside the sync engine and follows its status: it starts when
 * the socket is back and stops when the session ends.
 */
import { aiDiscipline, encounterType } from '@fieldchart/schema/api';
import type { AiStatus } from '../rest/index.ts';
import { API_PREFIX } from '../rest/rest-client.ts';
import { readFeedRows } from '../storage/feed-store.ts';
import type { LocalDb } from '../storage/local-db.ts';
import { receiptRows } from '../storage/outbox.ts';
import { addDictation, discardDictations, getDictation, listDictations, requeueDictations, type StoredDictation } from '../storage/dictation-store.ts';
import { DictationUploader } from '../sync/dictation-uploader.ts';
import type { SyncEngine } from '../sync/sync-engine.ts';
import { InvalidWriteError } from './errors.ts';
import type { AddDictationOptions, Dictation, FieldchartClient, FieldchartClientOptions } from './types.ts';

/** The tus endpoint (server/src/routes/audio.ts TUS_PATH under the API prefix). */
const TUS_PATH = '/uploads';

export interface DictationsDeps {
  readonly db: LocalDb;
  readonly engine: SyncEngine;
  readonly options: FieldchartClientOptions;
  readonly requireUser: () => Promise<void>;
  /** The visit's referral discipline as the device knows it (throws when the visit is unknown). */
  readonly disciplineOf: (scheduleUuid: string) => Promise<string | null>;
}

export function createDictations(deps: DictationsDeps): { api: FieldchartClient['dictations']; uploader: DictationUploader } {
  const { db, engine, options } = deps;
  const emit = (id: string) => engine.events.emit('dictation', { id });
  const locks = (globalThis.navigator as Navigator | undefined)?.locks;
  const lockName = `fieldchart-dictations:${options.dataDir}`;

  const uploader = new DictationUploader({
    db,
    endpoint: options.baseUrl.replace(/\/+$/, '') + API_PREFIX + TUS_PATH,
    rest: engine.rest,
    token: () => engine.session.tokenForHello(),
    refresh: () => engine.session.refresh(),
    active: () => engine.status.signedIn && engine.status.halted === null,
    visitPending: async (uuid) => (await receiptRows(db, [uuid]))[0]?.pending ?? 0,
    onChange: emit,
    onRejected: (_d, code, message) => engine.state.fail('dictation_rejected', `a dictation was refused (${code}): ${message}`),
    onError: (code, message) => engine.state.fail(code, message),
    // Tabs sharing one database: one of them sends at a time.
    ...(options.databaseWorker && locks ? { exclusive: <T>(fn: () => Promise<T>) => locks.request(lockName, fn) as Promise<T> } : {}),
    ...(options.backoff ? { backoff: options.backoff } : {}),
  });

  let wasConnected = engine.status.connected;
  engine.events.on('status', (s) => {
    if (!s.signedIn || s.halted !== null) {
      void uploader.pause();
    } else if (s.connected && !wasConnected) {
      // The server is reachable again: no need to wait out the backoff.
      uploader.pump({ resetBackoff: true });
    }
    wasConnected = s.connected;
  });
  // A visit's writes acknowledged: a run waiting for that visit may start.
  engine.events.on('ack', () => uploader.pump());
  if (engine.status.signedIn) uploader.pump();

  async function view(d: StoredDictation): Promise<Dictation> {
    const sending = uploader.progressOf(d.id);
    let suggestion: AiStatus | null = null;
    if (d.transcription_uuid) {
      const rows = await readFeedRows<AiStatus>(db, `tbl = 'ai_status' and schedule_uuid = $1`, [d.schedule_uuid]);
      suggestion = rows.map((r) => r.row).find((r) => r.transcription_uuid === d.transcription_uuid || r.uuid === d.transcription_uuid) ?? null;
    }
    return {
      id: d.id,
      scheduleUuid: d.schedule_uuid,
      discipline: d.discipline,
      encounterType: d.encounter_type,
      state: d.state === 'on_device' && sending !== null ? 'uploading' : d.state,
      bytes: d.bytes,
      sentBytes: d.state === 'on_device' ? Math.max(sending ?? 0, d.uploaded_bytes) : d.state === 'rejected' ? d.uploaded_bytes : d.bytes,
      transcriptionUuid: d.transcription_uuid,
      suggestion,
      lastError: d.error_code ? { code: d.error_code, message: d.error_message ?? '' } : null,
      recordedAt: d.created_at,
    };
  }

  const api: FieldchartClient['dictations'] = {
    async add(scheduleUuid, audio, opts: AddDictationOptions = {}) {
      await deps.requireUser();
      const bytes = audio instanceof Uint8Array ? audio : new Uint8Array(await audio.arrayBuffer());
      if (bytes.length === 0) throw new InvalidWriteError('The recording is empty', { audio: ['is empty'] });
      const rawDiscipline = opts.discipline ?? (await deps.disciplineOf(scheduleUuid));
      const discipline = aiDiscipline.safeParse(rawDiscipline ?? '');
      if (!discipline.success) throw new InvalidWriteError('The dictation needs a discipline the AI pipeline documents', { discipline: [rawDiscipline ? 'is not one the pipeline documents' : 'is required (the visit has no referral discipline on this device)'] });
      const encounter = encounterType.safeParse(opts.encounterType ?? 'daily_note');
      if (!encounter.success) throw new InvalidWriteError('Invalid encounter type', { encounter_type: ['is not a known encounter type'] });
      const id = globalThis.crypto.randomUUID();
      await addDictation(
        db,
        { id, schedule_uuid: scheduleUuid, discipline: discipline.data, encounter_type: encounter.data, idempotency_key: globalThis.crypto.randomUUID(), created_at: new Date().toISOString() },
        bytes,
      );
      emit(id);
      uploader.pump();
      const stored = await getDictation(db, id);
      if (!stored) throw new Error('the dictation was not stored');
      return view(stored);
    },
    async list(scheduleUuid) {
      return Promise.all((await listDictations(db, scheduleUuid ?? null)).map(view));
    },
    async get(id) {
      const d = await getDictation(db, id);
      return d ? view(d) : null;
    },
    async retry(ids) {
      const n = await requeueDictations(db, ids ?? null);
      if (n > 0) {
        for (const d of await listDictations(db)) emit(d.id);
        uploader.pump({ resetBackoff: true });
      }
      return n;
    },
    async discard(ids) {
      await discardDictations(db, ids ?? null);
      engine.events.emit('change', { reason: 'write' });
    },
    on: (listener) => engine.events.on('dictation', listener),
  };
  return { api, uploader };
}
