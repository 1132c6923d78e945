/**
 * Pushing recorded notifications to the user's devices (jobs push_notification → push_send).
 * One job per device token, so a transient failure retries that device only and a device
 * never gets the same notification twice from another device's retry.
 */
import { and, eq } from 'drizzle-orm';
import { notifications, pushTokens } from '@fieldchart/schema/db';
import type { Db } from '../../db/database.ts';
import { enqueue } from '../../jobs/enqueue.ts';
import type { FcmClient, PushOutcome } from './fcm-client.ts';

export function createPush(deps: { db: Db; fcm: FcmClient | null }) {
  const { db } = deps;
  return {
    /** push_notification: one push_send per device token of the notified user. Safe to run twice (job keys). */
    async fanOut(notificationId: string): Promise<number> {
      if (!deps.fcm) return 0;
      const [n] = await db.select({ ownerId: notifications.ownerId }).from(notifications).where(eq(notifications.id, notificationId));
      if (!n) return 0;
      const tokens = await db.select({ id: pushTokens.id }).from(pushTokens).where(eq(pushTokens.userId, n.ownerId));
      for (const t of tokens) {
        await enqueue(db, 'push_send', { notification_id: notificationId, token_id: t.id }, { jobKey: `push:${notificationId}:${t.id}`, maxAttempts: 8 });
      }
      return tokens.length;
    },

    /**
     * push_send: delivers one notification to one device. A token FCM calls unregistered or
     * invalid is deleted; a token that moved to another user since is skipped.
     */
    async sendOne(notificationId: string, tokenId: string, signal?: AbortSignal): Promise<PushOutcome | 'skipped'> {
      if (!deps.fcm) return 'skipped';
      const [n] = await db.select().from(notifications).where(eq(notifications.id, notificationId));
      const [t] = await db.select().from(pushTokens).where(eq(pushTokens.id, tokenId));
      if (!n || !t || t.userId !== n.ownerId || n.deletedAt) return 'skipped';
      const data: Record<string, string> = { notification_uuid: n.id, type: n.type };
      for (const [k, v] of Object.entries(n.data)) if (v !== null) data[k] = String(v);
      const outcome = await deps.fcm.send({ token: t.token, title: n.title, body: n.body, data }, signal);
      if (outcome === 'unregistered') {
        // Only this token row as read: a re-registration since (same token, new row) is kept.
        await db.delete(pushTokens).where(and(eq(pushTokens.id, t.id), eq(pushTokens.token, t.token)));
      }
      return outcome;
    },
  };
}

export type Push = ReturnType<typeof createPush>;
