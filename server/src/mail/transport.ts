import fs from 'node:fs/promises';
import path from 'node:path';
import nodemailer from 'nodemailer';

export interface OutgoingMail {
  readonly id: string;
  readonly to: string;
  readonly subject: string;
  readonly text: string;
  /** Reply-To header, when replies must reach another address than the sender. */
  readonly replyTo?: string | undefined;
}

export interface MailTransport {
  readonly kind: 'smtp' | 'file';
  /**
   * Delivers one message; answers where it went (a Message-ID, or the .eml path). An abort of
   * `signal` (the job's, at shutdown) closes the SMTP connection and rejects: nothing was sent.
   */
  send(mail: OutgoingMail, signal?: AbortSignal): Promise<{ messageId: string; storedAs: string | null }>;
  close(): void;
}

const SMTP_TIMEOUTS = { connectionTimeout: 15_000, greetingTimeout: 15_000, socketTimeout: 60_000 };

/**
 * SMTP_URL set: nodemailer over SMTP. Unset: nodemailer renders the same RFC 5322 message
 * and it is written under `<data dir>/mail/` as an .eml file, readable by the owner only.
 */
export function createMailTransport(opts: { smtpUrl: string | null; from: string; dataDir: string }): MailTransport {
  if (opts.smtpUrl) {
    // nodemailer waits 2 min for a connection, 30 s for the greeting and 10 min on a silent
    // socket: a stalled relay would hold a worker slot that long. The URL's own options win.
    const transporter = nodemailer.createTransport({ url: opts.smtpUrl, ...SMTP_TIMEOUTS });
    return {
      kind: 'smtp',
      async send(mail, signal) {
        const info = await transporter.sendMail({
          from: opts.from,
          to: mail.to,
          subject: mail.subject,
          text: mail.text,
          ...(mail.replyTo ? { replyTo: mail.replyTo } : {}),
          ...(signal ? { signal } : {}),
        });
        return { messageId: String(info.messageId), storedAs: null };
      },
      close: () => transporter.close(),
    };
  }
  const renderer = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'unix' });
  const dir = path.join(opts.dataDir, 'mail');
  return {
    kind: 'file',
    async send(mail) {
      const info = await renderer.sendMail({ from: opts.from, to: mail.to, subject: mail.subject, text: mail.text, ...(mail.replyTo ? { replyTo: mail.replyTo } : {}) });
      await fs.mkdir(dir, { recursive: true, mode: 0o700 });
      const file = path.join(dir, `${new Date().toISOString().replace(/[:.]/g, '-')}-${mail.id}.eml`);
      await fs.writeFile(file, info.message as Buffer, { mode: 0o600 });
      return { messageId: String(info.messageId), storedAs: file };
    },
    close: () => renderer.close(),
  };
}
