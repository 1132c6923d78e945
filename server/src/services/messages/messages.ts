/**
 * Email-based conversations between a clinician and patients (clinician-api.md, Messages).
 * Sending mails the patient through the outbox (sealed: the recipient, subject and body are
 * PHI) with the conversation's reply address `reply+<token>@<MESSAGES_REPLY_DOMAIN>`; the
 * patient's reply comes back through the inbound SMTP listener (inbound-smtp.ts) into the same
 * conversation. Only the token's SHA-256 is stored.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { and, count, desc, eq, sql } from 'drizzle-orm';
import { conversations, messages, users } from '@fieldchart/schema/db';
import type { sendMessageBody } from '@fieldchart/schema/api';
import type * as z from 'zod';
import type { Clock } from '../../clock.ts';
import { rowsOf, type Db } from '../../db/database.ts';
import { NotFound } from '../../errors.ts';
import type { ClinicianContext } from '../../http/audit-context.ts';
import type { PhiCrypto } from '../../security/phi-crypto.ts';
import { sha256 } from '../../security/random-tokens.ts';
import type { AuditLog } from '../audit/audit-log.ts';
import type { MailOutbox } from '../mail/mail-outbox.ts';
import type { NotificationsService } from '../notifications/notifications.ts';
import { stripQuotedReply } from './reply-text.ts';

type SendBody = z.output<typeof sendMessageBody>;
type ConversationRow = typeof conversations.$inferSelect;
type MessageRow = typeof messages.$inferSelect;

const REPLY_PREFIX = 'reply+';
/** 160 random bits, lower-case hex: survives mail systems that fold the local part's case. */
const newReplyToken = () => randomBytes(20).toString('hex');
const TOKEN_RE = /^[0-9a-f]{40}$/;

const conversationNotFound = () => new NotFound('Conversation not found', 'conversation_not_found');

/** The integer id of a path segment, or null (a malformed id names no conversation). */
export function conversationIdOf(text: string | number): number | null {
  const s = String(text);
  if (!/^[1-9]\d{0,9}$/.test(s)) return null;
  const n = Number(s);
  return n <= 2_147_483_647 ? n : null;
}

/** The reply token of `reply+<token>@<domain>` when the address is one of ours; else null. */
export function replyTokenOf(address: string, domain: string): string | null {
  const at = address.lastIndexOf('@');
  if (at < 0) return null;
  const local = address.slice(0, at).toLowerCase();
  if (address.slice(at + 1).toLowerCase() !== domain || !local.startsWith(REPLY_PREFIX)) return null;
  const token = local.slice(REPLY_PREFIX.length);
  return TOKEN_RE.test(token) ? token : null;
}

export interface InboundReply {
  /** The token of the `reply+<token>@…` recipient. */
  readonly token: string;
  readonly subject: string | null;
  /** The text part of the mail as received (quoted history still in it). */
  readonly text: string;
}

export function createMessages(deps: {
  db: Db;
  clock: Clock;
  phi: PhiCrypto;
  audit: AuditLog;
  mail: MailOutbox;
  notifications: NotificationsService;
  replyDomain: string;
}) {
  const { db, clock, phi, audit } = deps;
  const C = 'conversations';
  const M = 'messages';

  const messageRecord = (m: MessageRow) => ({
    uuid: m.id,
    conversation_id: m.conversationId,
    direction: m.direction,
    subject: phi.open(m.subjectEnc, M, 'subject_enc', m.id),
    body: phi.open(m.bodyEnc, M, 'body_enc', m.id) ?? '',
    is_read: m.isRead,
    read_at: m.readAt?.toISOString() ?? null,
    created_at: m.createdAt.toISOString(),
  });

  async function ownedConversation(tx: Db, userId: string, idText: string | number, lock = false): Promise<ConversationRow | null> {
    const id = conversationIdOf(idText);
    if (id === null) return null;
    const q = tx.select().from(conversations).where(and(eq(conversations.id, id), eq(conversations.ownerId, userId)));
    const [row] = lock ? await q.for('update') : await q;
    return row ?? null;
  }

  async function insertMessage(tx: Db, c: ConversationRow, m: { direction: 'outbound' | 'inbound'; body: string; subject: string | null; now: Date }) {
    const id = randomUUID();
    const outbound = m.direction === 'outbound';
    await tx.insert(messages).values({
      id,
      conversationId: c.id,
      ownerId: c.ownerId,
      direction: m.direction,
      bodyEnc: phi.seal(m.body, M, 'body_enc', id) as string,
      subjectEnc: phi.seal(m.subject, M, 'subject_enc', id),
      // The clinician's own messages are read; a patient's reply waits for them.
      isRead: outbound,
      readAt: outbound ? m.now : null,
      createdAt: m.now,
    });
    await tx.update(conversations).set({ lastMessageAt: m.now, updatedAt: m.now }).where(eq(conversations.id, c.id));
    return id;
  }

  return {
    /** Every conversation of the clinician, latest activity first, with unread count and last message. */
    async conversations(ctx: ClinicianContext) {
      return audit.around(ctx, { action: 'list', resourceType: 'conversation' }, async (tx, note) => {
        const rows = await tx
          .select()
          .from(conversations)
          .where(eq(conversations.ownerId, ctx.actorUserId))
          .orderBy(desc(conversations.lastMessageAt), desc(conversations.id));
        const counts = await tx
          .select({
            id: messages.conversationId,
            total: count(),
            unread: sql<number>`(count(*) filter (where not ${messages.isRead}))::int`,
          })
          .from(messages)
          .where(eq(messages.ownerId, ctx.actorUserId))
          .groupBy(messages.conversationId);
        const lasts = await tx
          .selectDistinctOn([messages.conversationId])
          .from(messages)
          .where(eq(messages.ownerId, ctx.actorUserId))
          .orderBy(messages.conversationId, desc(messages.createdAt), desc(messages.id));
        const countOf = new Map(counts.map((c) => [c.id, c]));
        const lastOf = new Map(lasts.map((m) => [m.conversationId, m]));
        note({ details: { count: rows.length } });
        return rows.map((c) => {
          const last = lastOf.get(c.id);
          return {
            id: c.id,
            patient_name: phi.open(c.patientNameEnc, C, 'patient_name_enc', String(c.id)) ?? '',
            patient_email: phi.open(c.patientEmailEnc, C, 'patient_email_enc', String(c.id)) ?? '',
            subject: phi.open(c.subjectEnc, C, 'subject_enc', String(c.id)),
            unread_count: Number(countOf.get(c.id)?.unread ?? 0),
            message_count: Number(countOf.get(c.id)?.total ?? 0),
            last_message: last ? messageRecord(last) : null,
            last_message_at: c.lastMessageAt.toISOString(),
            created_at: c.createdAt.toISOString(),
          };
        });
      });
    },

    /** One conversation's messages, newest first, paginated. 404 unknown or foreign. */
    async messages(ctx: ClinicianContext, idText: string, q: { page: number; per_page: number }) {
      return audit.around(ctx, { action: 'read', resourceType: 'conversation', resourceId: idText.slice(0, 20) }, async (tx) => {
        const c = await ownedConversation(tx, ctx.actorUserId, idText);
        if (!c) throw conversationNotFound();
        const [rows, [total]] = await Promise.all([
          tx
            .select()
            .from(messages)
            .where(eq(messages.conversationId, c.id))
            .orderBy(desc(messages.createdAt), desc(messages.id))
            .limit(q.per_page)
            .offset((q.page - 1) * q.per_page),
          tx.select({ n: count() }).from(messages).where(eq(messages.conversationId, c.id)),
        ]);
        const n = Number(total?.n ?? 0);
        return {
          data: rows.map(messageRecord),
          meta: { current_page: q.page, per_page: q.per_page, total: n, last_page: Math.max(1, Math.ceil(n / q.per_page)) },
        };
      });
    },

    /**
     * Sends a message: a new conversation, or (conversation_id) the next message of one of the
     * caller's conversations, mailed to that conversation's patient address. The mail is queued
     * in the same transaction. Answers the conversation id and message uuid.
     */
    async send(ctx: ClinicianContext, body: SendBody): Promise<{ conversation_id: number; uuid: string }> {
      return audit.around(ctx, { action: 'create', resourceType: 'message' }, async (tx, note) => {
        const now = clock.now();
        let c: ConversationRow;
        let token: string;
        if (body.conversation_id !== undefined) {
          const found = await ownedConversation(tx, ctx.actorUserId, body.conversation_id, true);
          if (!found) throw conversationNotFound();
          c = found;
          token = phi.open(c.replyTokenEnc, C, 'reply_token_enc', String(c.id)) ?? '';
        } else {
          token = newReplyToken();
          // The id is drawn first so the sealed values are bound to it from the start.
          const [seq] = rowsOf<{ id: number }>(await tx.execute(sql`select nextval(pg_get_serial_sequence('conversations', 'id'))::int as id`));
          const id = Number(seq?.id);
          const rowId = String(id);
          const [inserted] = await tx
            .insert(conversations)
            .values({
              id,
              ownerId: ctx.actorUserId,
              patientEmailEnc: phi.seal(body.patient_email, C, 'patient_email_enc', rowId) as string,
              patientNameEnc: phi.seal(body.patient_name, C, 'patient_name_enc', rowId) as string,
              subjectEnc: phi.seal(body.subject || null, C, 'subject_enc', rowId),
              replyTokenHash: sha256(token),
              replyTokenEnc: phi.seal(token, C, 'reply_token_enc', rowId) as string,
              lastMessageAt: now,
              createdAt: now,
              updatedAt: now,
            })
            .returning();
          if (!inserted) throw new Error('conversation insert returned nothing');
          c = inserted;
        }
        const subject = body.subject || phi.open(c.subjectEnc, C, 'subject_enc', String(c.id)) || null;
        const uuid = await insertMessage(tx, c, { direction: 'outbound', body: body.body, subject: body.subject || null, now });
        const [me] = await tx.select({ first: users.firstName, last: users.lastName }).from(users).where(eq(users.id, ctx.actorUserId));
        const clinician = me ? `${me.first} ${me.last}`.trim() : 'your clinician';
        const to = phi.open(c.patientEmailEnc, C, 'patient_email_enc', String(c.id)) ?? body.patient_email;
        await deps.mail.enqueueSealed(tx, {
          ownerId: ctx.actorUserId,
          to,
          subject: subject ?? `A message from ${clinician}`,
          text: `${body.body}\n\n--\n${clinician}\nReply to this email to answer; your reply reaches ${clinician} securely.`,
          replyTo: `${REPLY_PREFIX}${token}@${deps.replyDomain}`,
          kind: 'patient_message',
          label: `conversation ${c.id}`,
        });
        note({ resourceId: uuid, details: { conversation_id: c.id } });
        return { conversation_id: c.id, uuid };
      });
    },

    /** Marks the patient's messages of one conversation read. 404 unknown or foreign. */
    async markRead(ctx: ClinicianContext, idText: string): Promise<number> {
      return audit.around(ctx, { action: 'update', resourceType: 'conversation', resourceId: idText.slice(0, 20), details: { fields: ['is_read'] } }, async (tx) => {
        const c = await ownedConversation(tx, ctx.actorUserId, idText);
        if (!c) throw conversationNotFound();
        const changed = await tx
          .update(messages)
          .set({ isRead: true, readAt: clock.now() })
          .where(and(eq(messages.conversationId, c.id), eq(messages.isRead, false)))
          .returning({ id: messages.id });
        return changed.length;
      });
    },

    /** Whether a reply token names a conversation (the inbound listener's RCPT check). */
    async replyTokenKnown(token: string): Promise<boolean> {
      const [row] = await db.select({ id: conversations.id }).from(conversations).where(eq(conversations.replyTokenHash, sha256(token)));
      return Boolean(row);
    },

    /**
     * Stores a patient's emailed reply in its conversation (unread, quoted history and
     * signature cut) and notifies the clinician. Answers null when the token names no
     * conversation (deleted since RCPT) or nothing new was written.
     */
    async receiveReply(reply: InboundReply): Promise<{ conversation_id: number; uuid: string } | null> {
      const text = stripQuotedReply(reply.text);
      const [c] = await db.select().from(conversations).where(eq(conversations.replyTokenHash, sha256(reply.token)));
      if (!c) return null;
      const ctx = { actorUserId: null, organizationId: null, requestId: null };
      return audit.around(ctx, { action: 'create', resourceType: 'message', details: { via: 'inbound_email', conversation_id: c.id } }, async (tx, note) => {
        if (!text) return null;
        const uuid = await insertMessage(tx, c, { direction: 'inbound', body: text, subject: reply.subject, now: clock.now() });
        await deps.notifications.record(tx, { userId: c.ownerId, type: 'message_received', data: { conversation_id: c.id, message_uuid: uuid } });
        note({ resourceId: uuid });
        return { conversation_id: c.id, uuid };
      });
    },
  };
}

export type MessagesService = ReturnType<typeof createMessages>;
