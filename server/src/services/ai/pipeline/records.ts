import type { aiTranscriptions } from '@fieldchart/schema/db';
import type { AiStatusRecord } from '@fieldchart/schema/api';
import type { PhiCrypto } from '../../../security/phi-crypto.ts';

export type TranscriptionRow = typeof aiTranscriptions.$inferSelect;

/** The status record of a run (GET /ai/status, the `ai_status` feed rows): PHI opened here. */
export function statusRecordOf(phi: PhiCrypto, row: TranscriptionRow): AiStatusRecord {
  const open = (value: string | null, column: string) => phi.open(value, 'ai_transcriptions', column, row.id);
  const json = <T>(value: string | null, column: string): T | null => {
    const text = open(value, column);
    return text === null ? null : (JSON.parse(text) as T);
  };
  return {
    uuid: row.id,
    transcription_uuid: row.id,
    schedule_uuid: row.visitId,
    discipline: row.discipline,
    encounter_type: row.encounterType,
    status: row.status,
    raw_transcript: open(row.rawTranscriptEnc, 'raw_transcript_enc'),
    generated_soap: json(row.generatedSoapEnc, 'generated_soap_enc'),
    verification_flags: json(row.verificationFlagsEnc, 'verification_flags_enc'),
    confidence_summary: row.confidenceSummary ?? null,
    source_map: json(row.sourceMapEnc, 'source_map_enc'),
    not_mentioned: row.notMentioned ?? null,
    vital_signs: json(row.vitalSignsEnc, 'vital_signs_enc'),
    error_message: row.errorMessage,
    error_code: row.errorCode,
    attempts: row.attempts,
    stt_engine: row.sttEngine,
    generator: row.generator,
    audio_duration_ms: row.audioDurationMs,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
    finished_at: row.finishedAt?.toISOString() ?? null,
  };
}
