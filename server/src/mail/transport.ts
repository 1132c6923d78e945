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
  /** Delivers one message; answers where it went (a Message-ID, or the .eml path). */
  send(mail: OutgoingMail): Promise<{ messageId: string; storedAs: string | null }>;
  close(): void;
}

/**
 * SMTP_URL set: nodemailer over SMTP. Unset: nodemailer renders the same RFC 5322 message
 * and it is written under `<data dir>/mail/` as an .eml file, readable by the owner only.
 */
export function createMailTransport(opts: { smtpUrl: string | null; from: string; dataDir: string }): MailTransport {
  if (opts.smtpUrl) {
    const transporter = nodemailer.createTransport(opts.smtpUrl);
    return {
      kind: 'smtp',
      async send(mail) {
        const info = await transporter.sendMail({ from: opts.from, to: mail.to, subject: mail.subject, text: mail.text, ...(mail.replyTo ? { replyTo: mail.replyTo } : {}) });
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
