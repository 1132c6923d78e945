import { randomUUID } from 'node:crypto';
import { and, desc, eq, sql } from 'drizzle-orm';
import { mailOutbox } from '@fieldchart/schema/db';
import type { Db } from '../../db/database.ts';
import { enqueue } from '../../jobs/enqueue.ts';
import type { MailContent } from '../../mail/templates.ts';
import type { MailTransport } from '../../mail/transport.ts';
import type { Clock } from '../../clock.ts';
import { redactText } from '../../log-safety.ts';
import type { PhiCrypto } from '../../security/phi-crypto.ts';

/** A mail whose recipient, subject and body are PHI (a message to a patient). */
export interface SealedMail {
  /** The clinician it is sent for (the row is deleted with the account). */
  readonly ownerId: string;
  readonly to: string;
  readonly subject: string;
  readonly text: string;
  readonly replyTo: string;
  readonly kind: string;
  /** What the mail log shows instead of the recipient and subject (no PHI). */
  readonly label: string;
}

interface SealedParts {
  readonly to: string;
  readonly subject: string;
  readonly text: string;
}

export interface MailSummary {
  readonly id: string;
  readonly to: string;
  readonly subject: string;
  readonly kind: string;
  readonly status: string;
  readonly attempts: number;
  readonly created_at: string;
  readonly sent_at: string | null;
  readonly stored_as: string | null;
}

/**
 * Mail is written to an outbox row and a send_mail job in the caller's transaction: it
 * leaves only if what caused it commits, and SMTP trouble becomes a retry, not a 500.
 */
export function createMailOutbox(deps: { db: Db; transport: MailTransport; clock: Clock; phi: PhiCrypto }) {
  const openParts = (id: string, stored: string): SealedParts => JSON.parse(deps.phi.open(stored, 'mail_outbox', 'phi_enc', id) ?? '{}') as SealedParts;
  const summary = (r: typeof mailOutbox.$inferSelect): MailSummary => ({
    id: r.id,
    to: r.toAddress,
    subject: r.subject,
    kind: r.kind,
    status: r.status,
    attempts: r.attempts,
    created_at: r.createdAt.toISOString(),
    sent_at: r.sentAt?.toISOString() ?? null,
    stored_as: r.storedAs,
  });

  return {
    async enqueue(tx: Db, to: string, content: MailContent): Promise<string> {
      const [row] = await tx
        .insert(mailOutbox)
        .values({ toAddress: to, subject: content.subject, textBody: content.text, kind: content.kind })
        .returning({ id: mailOutbox.id });
      if (!row) throw new Error('mail_outbox insert returned nothing');
      await enqueue(tx, 'send_mail', { mail_id: row.id });
      return row.id;
    },

    /**
     * Like `enqueue`, for a mail carrying PHI: recipient, subject and body are sealed at rest
     * until sent (then cleared); the log keeps `label` only.
     */
    async enqueueSealed(tx: Db, mail: SealedMail): Promise<string> {
      const id = randomUUID();
      const parts: SealedParts = { to: mail.to, subject: mail.subject, text: mail.text };
      await tx.insert(mailOutbox).values({
        id,
        toAddress: mail.label,
        subject: mail.label,
        textBody: null,
        kind: mail.kind,
        replyTo: mail.replyTo,
        ownerId: mail.ownerId,
        phiEnc: deps.phi.seal(JSON.stringify(parts), 'mail_outbox', 'phi_enc', id),
      });
      await enqueue(tx, 'send_mail', { mail_id: id });
      return id;
    },

    /**
     * The send_mail task. Safe to run twice: a sent row is left alone. `signal`: the job's,
     * aborted at shutdown; the send is then a failed try, retried later.
     */
    async deliver(mailId: string, signal?: AbortSignal): Promise<'sent' | 'already_sent' | 'missing'> {
      const [row] = await deps.db.select().from(mailOutbox).where(eq(mailOutbox.id, mailId));
      if (!row) return 'missing';
      if (row.status === 'sent' || (row.textBody === null && row.phiEnc === null)) return 'already_sent';
      const parts: SealedParts = row.phiEnc ? openParts(row.id, row.phiEnc) : { to: row.toAddress, subject: row.subject, text: row.textBody ?? '' };
      try {
        const result = await deps.transport.send({ id: row.id, to: parts.to, subject: parts.subject, text: parts.text, replyTo: row.replyTo ?? undefined }, signal);
        await deps.db
          .update(mailOutbox)
          .set({
            status: 'sent',
            sentAt: deps.clock.now(),
            messageId: result.messageId,
            storedAs: result.storedAs,
            textBody: null,
            phiEnc: null,
            attempts: sql`${mailOutbox.attempts} + 1`,
          })
          .where(eq(mailOutbox.id, mailId));
        return 'sent';
      } catch (err) {
        await deps.db
          .update(mailOutbox)
          .set({
            status: 'retrying',
            attempts: sql`${mailOutbox.attempts} + 1`,
            lastError: err instanceof Error ? redactText(err.message) : 'send failed',
          })
          .where(and(eq(mailOutbox.id, mailId), eq(mailOutbox.status, row.status)));
        throw err;
      }
    },

    async list(limit = 50): Promise<MailSummary[]> {
      const rows = await deps.db.select().from(mailOutbox).orderBy(desc(mailOutbox.createdAt)).limit(limit);
      return rows.map(summary);
    },

    async get(id: string): Promise<(MailSummary & { text: string | null; last_error: string | null }) | null> {
      const [row] = await deps.db.select().from(mailOutbox).where(eq(mailOutbox.id, id));
      return row ? { ...summary(row), text: row.textBody, last_error: row.lastError } : null;
    },
  };
}

export type MailOutbox = ReturnType<typeof createMailOutbox>;
