/**
 * Applies a device's mutations in order, exactly once (docs/sync-protocol.md, Mutations): one
 * transaction per batch, each mutation in its own savepoint through the REST services, the
 * device's last applied id advanced in the same transaction. Shared by the socket and the
 * REST fallback (`POST /sync/mutations`).
 */
import { and, eq, inArray, sql } from 'drizzle-orm';
import { syncClients, syncRejections } from '@fieldchart/schema/db';
import type { ClientMessage, ServerMessage } from '@fieldchart/schema/sync';
import { AppError, Invalid, TooMany } from '../errors.ts';
import type { Services } from '../services/index.ts';
import type { MutationRunner } from './mutations.ts';

export type MutationMessage = Extract<ClientMessage, { type: 'mutation' }>;
export type MutationReply = Extract<ServerMessage, { type: 'ack' | 'reject' | 'retry' }>;

export interface MutationDevice {
  readonly userId: string;
  readonly sessionId: string;
  readonly clientId: string;
  readonly organizationId: string | null;
  /** Ties each mutation's audit entries to where it came from (`sync:<socket>` or the HTTP request id). */
  readonly requestIdPrefix: string;
}

export type BatchOutcome =
  | { readonly kind: 'applied'; readonly replies: MutationReply[]; readonly lastMutationId: number; readonly retryFrom: number | null }
  | { readonly kind: 'session'; readonly state: 'revoked' | 'disabled' };

export async function applyMutationBatch(
  services: Services,
  runMutation: MutationRunner,
  device: MutationDevice,
  batch: readonly MutationMessage[],
): Promise<BatchOutcome> {
  return services.unitOfWork.transaction(async (tx): Promise<BatchOutcome> => {
    const state = await services.sessions.state(device.userId, device.sessionId);
    if (state !== 'live') return { kind: 'session', state };
    const where = and(eq(syncClients.userId, device.userId), eq(syncClients.clientId, device.clientId));
    await tx.insert(syncClients).values({ userId: device.userId, clientId: device.clientId }).onConflictDoNothing();
    const [client] = await tx.select({ last: syncClients.lastMutationId }).from(syncClients).where(where).for('update');
    let last = client?.last ?? 0;
    let retryFrom: number | null = null;
    const replies: MutationReply[] = [];
    const ctx = { actorUserId: device.userId, organizationId: device.organizationId };
    const seen = batch.filter((m) => m.mutation_id <= last).map((m) => m.mutation_id);
    const refused = new Map(
      seen.length === 0
        ? []
        : (
            await tx
              .select()
              .from(syncRejections)
              .where(and(eq(syncRejections.userId, device.userId), eq(syncRejections.clientId, device.clientId), inArray(syncRejections.mutationId, seen)))
          ).map((r) => [r.mutationId, r]),
    );
    for (const [i, m] of batch.entries()) {
      // Already processed (a lost answer, a replay, a duplicated frame): answered as it was the
      // first time — the same reject for a refused one, an ack otherwise — and not applied.
      if (m.mutation_id <= last) {
        const r = refused.get(m.mutation_id);
        replies.push(
          r
            ? { type: 'reject', mutation_id: m.mutation_id, status: r.status, code: r.code, message: r.message, ...(r.errors ? { errors: r.errors } : {}) }
            : { type: 'ack', mutation_id: m.mutation_id, result: { duplicate: true } },
        );
        continue;
      }
      try {
        const result = await services.unitOfWork.savepoint(() =>
          runMutation({ ...ctx, requestId: `${device.requestIdPrefix}:${m.mutation_id}` }, m.name, m.args),
        );
        replies.push({ type: 'ack', mutation_id: m.mutation_id, result: result ?? null });
      } catch (err) {
        const reply = replyOf(err, m.mutation_id);
        if (!reply) throw err;
        if (reply.type === 'retry') {
          // Not the mutation's fault: it stays unprocessed, and so does everything after it.
          for (const rest of batch.slice(i)) replies.push({ ...reply, mutation_id: rest.mutation_id });
          retryFrom = m.mutation_id;
          break;
        }
        replies.push(reply);
        await tx.insert(syncRejections).values({
          userId: device.userId,
          clientId: device.clientId,
          mutationId: m.mutation_id,
          status: reply.status,
          code: reply.code,
          message: reply.message,
          errors: reply.errors ?? null,
        });
      }
      last = m.mutation_id;
    }
    await tx.update(syncClients).set({ lastMutationId: last, updatedAt: sql`now()` }).where(where);
    return { kind: 'applied', replies, lastMutationId: last, retryFrom };
  });
}

/** The device's last processed mutation id (0 for a new device). */
export async function lastMutationIdOf(services: Services, userId: string, clientId: string): Promise<number> {
  const [client] = await services.unitOfWork.db
    .select({ last: syncClients.lastMutationId })
    .from(syncClients)
    .where(and(eq(syncClients.userId, userId), eq(syncClients.clientId, clientId)));
  return client?.last ?? 0;
}

/** A refusal in the REST API's terms, a retry for a throttle, or null: not the mutation's fault. */
function replyOf(err: unknown, mutationId: number): Extract<MutationReply, { type: 'reject' | 'retry' }> | null {
  if (err instanceof TooMany) {
    const seconds = Number(err.headers['retry-after'] ?? '1');
    return { type: 'retry', mutation_id: mutationId, after_ms: seconds * 1000 };
  }
  if (err instanceof AppError && err.statusCode >= 400 && err.statusCode < 500) {
    return {
      type: 'reject',
      mutation_id: mutationId,
      status: err.statusCode,
      code: err.code,
      message: err.message,
      ...(err instanceof Invalid && Object.keys(err.errors).length > 0 ? { errors: err.errors } : {}),
    };
  }
  return null;
}
