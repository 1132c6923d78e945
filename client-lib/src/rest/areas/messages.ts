/** Patient messaging (email-based conversations) and the notification history. */
import type * as z from 'zod';
import type { chatMessage, conversation, notification, NotificationType, sendMessageBody } from '@fieldchart/schema/api';
import { ENDPOINTS as E } from '../endpoints.ts';
import type { Invoker } from '../invoke.ts';
import type { AuthWriteOptions, MessageResult, Page, ReadOptions } from '../options.ts';

/** A conversation with a patient (`Conversation` in the OpenAPI document); `id` is an integer. */
export type Conversation = z.output<typeof conversation>;
/** A message of a conversation: `outbound` (sent by the clinician) or `inbound` (the patient's emailed reply). */
export type ChatMessage = z.output<typeof chatMessage>;
/** Body of `POST /messages/send`. */
export type SendMessageBody = z.input<typeof sendMessageBody>;
/** A recorded notification (`Notification`): a PHI-free title and body, ids in `data`. */
export type NotificationRecord = z.output<typeof notification>;
export type { NotificationType };

/** Query of `GET /messages/{conversationId}`. */
export type MessageListQuery = {
  readonly page?: number;
  readonly per_page?: number;
};

/** Query of `GET /notifications`: `is_read` 0 = unread only, 1 = read only. */
export type NotificationListQuery = {
  readonly page?: number;
  readonly per_page?: number;
  readonly is_read?: 0 | 1;
};

/** `client.messages`. Unknown and foreign conversations are both 404 `conversation_not_found`. */
export interface MessagesApi {
  /** `GET /messages/conversations`: latest activity first, with unread counts and the last message. */
  conversations(options?: ReadOptions): Promise<Conversation[]>;
  /** `GET /messages/{conversationId}`: the conversation's messages, newest first. */
  list(conversationId: number, query?: MessageListQuery, options?: ReadOptions): Promise<Page<ChatMessage>>;
  /** `POST /messages/send`: mails the patient; with `conversation_id`, the message joins that conversation. */
  send(body: SendMessageBody, options?: AuthWriteOptions): Promise<MessageResult>;
  /** `PUT /messages/{conversationId}/read`: marks the patient's messages read. */
  markRead(conversationId: number, options?: AuthWriteOptions): Promise<MessageResult>;
}

/** `client.notifications`. */
export interface NotificationsApi {
  /** `GET /notifications`: newest first. */
  list(query?: NotificationListQuery, options?: ReadOptions): Promise<Page<NotificationRecord>>;
  /** `PUT /notifications/{uuid}/read`. 404 for another user's notification. */
  markRead(uuid: string, options?: AuthWriteOptions): Promise<MessageResult>;
  /** `PUT /notifications/read-all`. */
  markAllRead(options?: AuthWriteOptions): Promise<MessageResult>;
}

export function messagesApi(call: Invoker): MessagesApi {
  return {
    conversations: (o) => call.data(E['messages.conversations'], {}, o),
    list: (conversationId, query, o) => call.page(E['messages.list'], { params: { conversationId: String(conversationId) }, query }, o),
    send: (body, o) => call.message(E['messages.send'], { body }, o),
    markRead: (conversationId, o) => call.message(E['messages.markRead'], { params: { conversationId: String(conversationId) } }, o),
  };
}

export function notificationsApi(call: Invoker): NotificationsApi {
  return {
    list: (query, o) => call.page(E['notifications.list'], { query }, o),
    markRead: (uuid, o) => call.message(E['notifications.markRead'], { params: { uuid } }, o),
    markAllRead: (o) => call.message(E['notifications.markAllRead'], {}, o),
  };
}
