import type * as z from 'zod';
import type { restMutationsBody, restMutationsResult } from '@fieldchart/schema/sync';
import { ENDPOINTS as E } from '../endpoints.ts';
import type { Invoker } from '../invoke.ts';
import type { AuthWriteOptions } from '../options.ts';

export type SyncMutationsBody = z.input<typeof restMutationsBody>;
export type SyncMutationsResult = z.infer<typeof restMutationsResult>;

/** `client.sync`: the sync channel's HTTP fallback (the socket itself is the offline client's). */
export interface SyncApi {
  /**
   * `POST /sync/mutations`: queued mutations applied in order, exactly once per `client_id`
   * and `mutation_id`, each answered ack, reject or retry (docs/sync-protocol.md).
   */
  applyMutations(body: SyncMutationsBody, options?: AuthWriteOptions): Promise<SyncMutationsResult>;
}

export function syncApi(call: Invoker): SyncApi {
  return {
    applyMutations: (body, o) => call.data(E['sync.applyMutations'], { body }, o),
  };
}
