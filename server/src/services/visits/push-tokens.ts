/**
 * FCM device tokens: one row per device token (unique), several per user; a token belongs
 * to the last user who registered it (shared devices). A user keeps the MAX_TOKENS_PER_USER
 * most recently seen devices; tokens FCM reports unregistered are pruned by the push job
 * (services/notifications/push.ts).
 */
import { and, desc, eq, notInArray } from 'drizzle-orm';
import { pushTokens } from '@fieldchart/schema/db';
import type { Clock } from '../../clock.ts';
import type { Db } from '../../db/database.ts';

/** Devices a user pushes to; an older token beyond it is a phone long since replaced. */
export const MAX_TOKENS_PER_USER = 20;

export function createPushTokens(deps: { db: Db; clock: Clock }) {
  const { db, clock } = deps;
  return {
    async register(userId: string, token: string): Promise<void> {
      const now = clock.now();
      await db.transaction(async (tx) => {
        await tx
          .insert(pushTokens)
          .values({ userId, token, createdAt: now, lastSeenAt: now })
          .onConflictDoUpdate({ target: pushTokens.token, set: { userId, lastSeenAt: now } });
        const keep = tx
          .select({ id: pushTokens.id })
          .from(pushTokens)
          .where(eq(pushTokens.userId, userId))
          .orderBy(desc(pushTokens.lastSeenAt), desc(pushTokens.createdAt))
          .limit(MAX_TOKENS_PER_USER);
        await tx.delete(pushTokens).where(and(eq(pushTokens.userId, userId), notInArray(pushTokens.id, keep)));
      });
    },

    /** The user's registered device tokens (operator and tests). */
    async of(userId: string): Promise<string[]> {
      const rows = await db.select({ token: pushTokens.token }).from(pushTokens).where(eq(pushTokens.userId, userId)).orderBy(desc(pushTokens.lastSeenAt));
      return rows.map((r) => r.token);
    },
  };
}
