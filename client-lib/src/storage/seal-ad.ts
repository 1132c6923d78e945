/**
 * The additional data each sealed value is bound to: its table and the clear columns that
 * place it. A value copied into another row (or table) fails to open. Part of the stored
 * format: changing one needs a migration that re-seals.
 */
import { ad } from './row-cipher.ts';

export const metaAd = (key: string): string => ad('meta', key);

export const feedRowAd = (tbl: string, id: string): string => ad('feed_rows', tbl, id);

export const stagingAd = (seq: number): string => ad('feed_staging', seq);

/**
 * An outbox entry's arguments. Not bound to its mutation id: ids are renumbered (a restored
 * database, a cloned install) while the entry stays the same write; its name, device time and
 * visit never change.
 */
export const outboxAd = (e: { name: string; client_time: string; schedule_uuid: string | null }): string =>
  ad('outbox', e.name, e.client_time, e.schedule_uuid);

export const outboxResultAd = (e: { name: string; client_time: string; schedule_uuid: string | null }): string =>
  ad('outbox_result', e.name, e.client_time, e.schedule_uuid);

export const rejectionAd = (mutationId: number): string => ad('rejections', mutationId);

export const failureAd = (mutationId: number): string => ad('failures', mutationId);

export const draftUpdateAd = (doc: string, id: number): string => ad('draft_updates', doc, id);

/** One chunk of a dictation's audio: bound to its recording and position, so chunks cannot be swapped. */
export const dictationChunkAd = (dictationId: string, seq: number): string => ad('dictation_chunks', dictationId, seq);
