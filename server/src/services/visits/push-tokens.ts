/** FCM device tokens: a token belongs to the last user who registered it (shared devices). */
import { pushTokens } from '@fieldchart/schema/db';
import type { Clock } from '../../clock.ts';
import type { Db } from '../../db/database.ts';

export function createPushTokens(deps: { db: Db; clock: Clock }) {
  const { db, clock } = deps;
  return {
    async register(userId: string, token: string): Promise<void> {
      const now = clock.now();
      await db
        .insert(pushTokens)
        .values({ userId, token, createdAt: now, lastSeenAt: now })
        .onConflictDoUpdate({ target: pushTokens.token, set: { userId, lastSeenAt: now } });
    },
  };
}
