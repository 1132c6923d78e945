/**
 * A real SMTP server on a loopback port that keeps what it receives: tests send through
 * nodemailer over SMTP exactly like production and read codes and links out of the parsed
 * messages.
 */
import { SMTPServer } from 'smtp-server';
import PostalMime from 'postal-mime';
import type { AddressInfo } from 'node:net';
import { eventually } from './eventually.ts';

export interface ReceivedMail {
  readonly to: string[];
  readonly from: string;
  readonly subject: string;
  readonly text: string;
  readonly raw: string;
}

export interface SmtpSink {
  readonly url: string;
  readonly messages: ReceivedMail[];
  /** The newest message to `to` (optionally matching), waiting for it to arrive. */
  waitFor(to: string, match?: (m: ReceivedMail) => boolean, timeoutMs?: number): Promise<ReceivedMail>;
  close(): Promise<void>;
}

export async function startSmtpSink(): Promise<SmtpSink> {
  const messages: ReceivedMail[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        PostalMime.parse(raw).then(
          (parsed) => {
            messages.push({
              to: session.envelope.rcptTo.map((r) => r.address.toLowerCase()),
              from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
              subject: parsed.subject ?? '',
              text: parsed.text ?? '',
              raw,
            });
            callback();
          },
          (err: Error) => callback(err),
        );
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.server.address() as AddressInfo;
  return {
    url: `smtp://127.0.0.1:${port}`,
    messages,
    waitFor(to, match = () => true, timeoutMs = 10_000) {
      return eventually(
        () => {
          const found = [...messages].reverse().find((m) => m.to.includes(to.toLowerCase()) && match(m));
          if (!found) throw new Error(`no mail to ${to} yet (${messages.length} received)`);
          return found;
        },
        { timeoutMs },
      );
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
