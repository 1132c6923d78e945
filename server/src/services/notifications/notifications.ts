/**
 * The notification history: one row per event for a user, recorded in the caller's own
 * transaction (so it exists exactly when what it reports commits), readable over REST and
 * synced to devices (the feed's `notifications` table). When FCM is configured, recording also
 * enqueues a `push_notification` job in that transaction; the push never runs in a request.
 */
import { randomUUID } from 'node:crypto';
import { and, count, desc, eq, isNull } from 'drizzle-orm';
import { notifications } from '@fieldchart/schema/db';
import type { NotificationType } from '@fieldchart/schema/api';
import type { Clock } from '../../clock.ts';
import type { Db } from '../../db/database.ts';
import { NotFound } from '../../errors.ts';
import { enqueue } from '../../jobs/enqueue.ts';
import { isUuid } from '../ids.ts';

/** Ids (and flags) only: never a name, an address or note text. */
export type NotificationData = Record<string, string | number | boolean | null>;

export interface NotificationInput {
  readonly userId: string;
  readonly type: NotificationType;
  readonly data?: NotificationData;
}

/** Fixed, PHI-free wording per type: shown on lock screens and sent through Google. */
export const NOTIFICATION_TEXT: Record<NotificationType, { readonly title: string; readonly body: string }> = {
  note_ready: { title: 'Your note is ready', body: 'A drafted SOAP note is ready for your review.' },
  note_failed: { title: 'Note drafting failed', body: 'A note could not be drafted. Open the visit to retry.' },
  invitation_received: { title: 'New invitation', body: 'An organization invited you to join it.' },
  join_request_approved: { title: 'Join request approved', body: 'Your request to join an organization was approved.' },
  visit_scheduled: { title: 'Visit scheduled', body: 'Your organization scheduled a visit for you.' },
  visit_changed: { title: 'Visit changed', body: 'Your organization changed one of your visits.' },
  message_received: { title: 'New message', body: 'A patient replied to your message.' },
};

export type NotificationRow = typeof notifications.$inferSelect;

export function notificationRecord(r: NotificationRow) {
  return {
    uuid: r.id,
    type: r.type as NotificationType,
    title: r.title,
    body: r.body,
    data: r.data,
    is_read: r.isRead,
    read_at: r.readAt?.toISOString() ?? null,
    created_at: r.createdAt.toISOString(),
  };
}
export type NotificationRecord = ReturnType<typeof notificationRecord>;

export function createNotifications(deps: { db: Db; clock: Clock; pushEnabled: boolean }) {
  const { db, clock } = deps;
  return {
    /**
     * Records a notification for `userId` in `tx` (a transaction of the caller, or the
     * database) and, with FCM configured, enqueues its push on the same transaction. Answers
     * the notification's uuid. `data` holds ids only (e.g. `{ schedule_uuid }`).
     */
    async record(tx: Db, input: NotificationInput): Promise<string> {
      const id = randomUUID();
      const text = NOTIFICATION_TEXT[input.type];
      await tx.insert(notifications).values({
        id,
        ownerId: input.userId,
        type: input.type,
        title: text.title,
        body: text.body,
        data: input.data ?? {},
        createdAt: clock.now(),
      });
      if (deps.pushEnabled) await enqueue(tx, 'push_notification', { notification_id: id });
      return id;
    },

    /** Newest first; `isRead` filters (undefined: all). */
    async list(userId: string, q: { page: number; per_page: number; is_read?: boolean | undefined }) {
      const where = and(
        eq(notifications.ownerId, userId),
        isNull(notifications.deletedAt),
        q.is_read === undefined ? undefined : eq(notifications.isRead, q.is_read),
      );
      const [rows, [total]] = await Promise.all([
        db
          .select()
          .from(notifications)
          .where(where)
          .orderBy(desc(notifications.createdAt), desc(notifications.rowVersion))
          .limit(q.per_page)
          .offset((q.page - 1) * q.per_page),
        db.select({ n: count() }).from(notifications).where(where),
      ]);
      const n = Number(total?.n ?? 0);
      return {
        data: rows.map(notificationRecord),
        meta: { current_page: q.page, per_page: q.per_page, total: n, last_page: Math.max(1, Math.ceil(n / q.per_page)) },
      };
    },

    /** Marks one of the caller's notifications read (again: unchanged). 404 unknown or foreign. */
    async markRead(userId: string, uuid: string): Promise<void> {
      const [row] = isUuid(uuid)
        ? await db
            .select({ id: notifications.id, isRead: notifications.isRead })
            .from(notifications)
            .where(and(eq(notifications.id, uuid), eq(notifications.ownerId, userId), isNull(notifications.deletedAt)))
        : [];
      if (!row) throw new NotFound('Notification not found', 'notification_not_found');
      // Only a change is written: an update bumps row_version and re-sends the row to devices.
      if (!row.isRead) await db.update(notifications).set({ isRead: true, readAt: clock.now() }).where(eq(notifications.id, row.id));
    },

    /** Marks every unread notification of the caller read; answers how many changed. */
    async markAllRead(userId: string): Promise<number> {
      const changed = await db
        .update(notifications)
        .set({ isRead: true, readAt: clock.now() })
        .where(and(eq(notifications.ownerId, userId), eq(notifications.isRead, false), isNull(notifications.deletedAt)))
        .returning({ id: notifications.id });
      return changed.length;
    },
  };
}

export type NotificationsService = ReturnType<typeof createNotifications>;
