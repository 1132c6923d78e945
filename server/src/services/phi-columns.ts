/**
 * Every column that holds PHI encrypted with the key ring, with how its rows are bound
 * (phi-crypto's `aadOf(table, column, rowId)`). Key rotation and `keys status` walk this
 * list; a new encrypted column must be added here, or rotation leaves it under the old key
 * (test/server/phi-at-rest.test.ts checks every listed column after a rotation).
 */
export interface PhiTable {
  /** SQL table name. */
  readonly table: string;
  /** SQL primary-key columns, in key order. */
  readonly key: readonly string[];
  /** SQL names of the encrypted columns. */
  readonly columns: readonly string[];
  /** The row id the values are bound to, from the primary-key values. */
  rowId(key: readonly string[]): string;
}

const byId = (key: readonly string[]) => key[0] ?? '';

export const PHI_TABLES: readonly PhiTable[] = [
  {
    table: 'patients',
    key: ['id'],
    columns: ['first_name_enc', 'last_name_enc', 'email_enc', 'phone_enc', 'address_enc'],
    rowId: byId,
  },
  { table: 'visits', key: ['id'], columns: ['address_enc', 'notes_enc'], rowId: byId },
  {
    table: 'soap_notes',
    key: ['id'],
    columns: ['subjective_enc', 'objective_enc', 'assessment_enc', 'plan_enc', 'vital_signs_enc', 'signature_enc'],
    rowId: byId,
  },
  // Patient messaging (services/messages): conversations bound to their integer id.
  { table: 'conversations', key: ['id'], columns: ['patient_email_enc', 'patient_name_enc', 'subject_enc', 'reply_token_enc'], rowId: byId },
  { table: 'messages', key: ['id'], columns: ['body_enc', 'subject_enc'], rowId: byId },
  // Mail to patients until it is sent (services/mail/mail-outbox.ts enqueueSealed).
  { table: 'mail_outbox', key: ['id'], columns: ['phi_enc'], rowId: byId },
  // Yjs updates of draft notes, bound to their (sequence-drawn) id; server/src/services/sync/drafts-store.ts.
  { table: 'draft_updates', key: ['id'], columns: ['update_enc'], rowId: byId },
  // The clinician's home address (services/routing/policy.ts), bound to the user id.
  { table: 'scheduling_policies', key: ['user_id'], columns: ['home_base_address_enc'], rowId: byId },
  // Geocoded points, bound to their keyed-hash address key (services/routing/geocoder.ts).
  { table: 'geocode_cache', key: ['address_key'], columns: ['point_enc'], rowId: byId },
  // Audio files and tus uploads: the bytes are encrypted under a per-file data key, and that
  // key is stored here wrapped by the ring, so rotation re-wraps it (services/audio/frames.ts).
  { table: 'audio_files', key: ['id'], columns: ['data_key_enc'], rowId: byId },
  { table: 'audio_uploads', key: ['id'], columns: ['data_key_enc'], rowId: byId },
  // AI documentation runs: everything derived from the recording (services/ai/pipeline).
  {
    table: 'ai_transcriptions',
    key: ['id'],
    columns: ['raw_transcript_enc', 'segments_enc', 'generated_soap_enc', 'source_map_enc', 'verification_flags_enc', 'vital_signs_enc'],
    rowId: byId,
  },
  // Stored idempotent responses can carry PHI; services/idempotency.ts binds them to scope NUL key.
  {
    table: 'idempotency_keys',
    key: ['scope', 'key'],
    columns: ['response_body'],
    rowId: (key) => `${key[0] ?? ''}\u0000${key[1] ?? ''}`,
  },
];
