import * as z from 'zod';
import { isoDateTime, pathId, pageNumber, perPage } from './common.ts';

/**
 * The kinds of notification the server records. Titles and bodies are fixed phrases without
 * PHI (they are pushed through a third party and shown on a lock screen); `data` carries ids.
 */
export const NOTIFICATION_TYPES = [
  'note_ready',
  'note_failed',
  'invitation_received',
  'join_request_approved',
  'visit_scheduled',
  'visit_changed',
  'message_received',
] as const;
export type NotificationType = (typeof NOTIFICATION_TYPES)[number];

/** Ids and flags only: what the app needs to open the right screen. */
export const notificationData = z.record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.null()]));

export const notification = z
  .object({
    uuid: z.string(),
    type: z.enum(NOTIFICATION_TYPES),
    title: z.string(),
    body: z.string(),
    data: notificationData,
    is_read: z.boolean(),
    read_at: isoDateTime.nullable(),
    created_at: isoDateTime,
  })
  .meta({ id: 'Notification' });

export const notificationListQuery = z.object({
  page: pageNumber,
  per_page: perPage(20),
  is_read: z
    .enum(['0', '1'], { message: 'must be 0 (unread) or 1 (read)' })
    .optional()
    .transform((v) => (v === undefined ? undefined : v === '1')),
});

// A malformed uuid answers the same 404 as an unknown or foreign one.
export const notificationUuidParams = z.object({ uuid: pathId });
