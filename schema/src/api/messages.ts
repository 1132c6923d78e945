import * as z from 'zod';
import { email, isoDateTime, name, pathId, text, pageNumber, perPage } from './common.ts';

/** Email-based patient messaging (clinician-api.md, Messages). */

// Not z.coerce.number(): a malformed id must answer the same 404 as an unknown or foreign one.
export const conversationIdParams = z.object({ conversationId: pathId.meta({ type: 'integer', description: 'The conversation id' }) });

export const messageListQuery = z.object({
  page: pageNumber,
  per_page: perPage(50),
});

export const MESSAGE_BODY_MAX = 20_000;

export const sendMessageBody = z.object({
  patient_email: email,
  patient_name: name(200),
  body: text(MESSAGE_BODY_MAX).min(1, 'is required'),
  subject: text(200).optional(),
  conversation_id: z.number().int().positive().max(2_147_483_647).optional().describe('Reply in this conversation (one of the caller’s)'),
});

export const chatMessage = z
  .object({
    uuid: z.string(),
    conversation_id: z.number().int(),
    direction: z.enum(['outbound', 'inbound']),
    subject: z.string().nullable(),
    body: z.string(),
    is_read: z.boolean(),
    read_at: isoDateTime.nullable(),
    created_at: isoDateTime,
  })
  .meta({ id: 'ChatMessage' });

export const conversation = z
  .object({
    id: z.number().int(),
    patient_name: z.string(),
    patient_email: z.string(),
    subject: z.string().nullable(),
    unread_count: z.number().int(),
    message_count: z.number().int(),
    last_message: chatMessage.nullable(),
    last_message_at: isoDateTime,
    created_at: isoDateTime,
  })
  .meta({ id: 'Conversation' });
