import { z } from 'zod';

/** Every background task and its payload: the one map that enqueuers and tasks share. */
export const taskPayloads = {
  send_mail: z.object({ mail_id: z.uuid() }),
  cleanup_expired: z.object({}).loose(),
  push_notification: z.object({ notification_id: z.uuid() }),
  push_send: z.object({ notification_id: z.uuid(), token_id: z.uuid() }),
  ai_process_audio: z.object({ transcription_uuid: z.uuid() }),
} as const;

export type TaskName = keyof typeof taskPayloads;
export type TaskPayload<T extends TaskName> = z.infer<(typeof taskPayloads)[T]>;
