/**
 * The inbound mail listener for patients' replies (INBOUND_SMTP_PORT; off by default). It
 * accepts mail only for `reply+<token>@<MESSAGES_REPLY_DOMAIN>` addresses whose token names a
 * conversation: anything else is refused at RCPT (550), so it is no open relay and stores
 * nothing it cannot place. Messages over the size cap are refused (552). The text part
 * (parsed with postal-mime) goes to `messages.receiveReply`, which cuts quoted history and
 * signatures. Nothing of a mail is logged but its size and outcome.
 */
import type { AddressInfo } from 'node:net';
import PostalMime from 'postal-mime';
import { SMTPServer, type SMTPServerDataStream, type SMTPServerSession } from 'smtp-server';
import type { FastifyBaseLogger } from 'fastify';
import { safeError } from '../../log-safety.ts';
import { replyTokenOf, type MessagesService } from './messages.ts';

export interface InboundSmtp {
  readonly port: number;
  close(): Promise<void>;
}

class SmtpRefusal extends Error {
  constructor(
    message: string,
    readonly responseCode: number,
  ) {
    super(message);
  }
}

/** Text of a parsed mail: the text part, or the HTML part reduced to text. */
function textOf(parsed: { text?: string | undefined; html?: string | undefined }): string {
  if (parsed.text) return parsed.text;
  if (!parsed.html) return '';
  return parsed.html
    .replace(/<(style|script)[\s\S]*?<\/\1>/gi, '')
    .replace(/<blockquote[\s\S]*?<\/blockquote>/gi, '')
    .replace(/<br\s*\/?>|<\/p>|<\/div>/gi, '\n')
    .replace(/<[^>]+>/g, '')
    .replace(/&nbsp;/g, ' ')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&amp;/g, '&');
}

export async function startInboundSmtp(opts: {
  host: string;
  port: number;
  maxBytes: number;
  replyDomain: string;
  messages: MessagesService;
  log: FastifyBaseLogger;
}): Promise<InboundSmtp> {
  const readAll = (stream: SMTPServerDataStream) =>
    new Promise<Buffer>((resolve, reject) => {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('error', reject);
      stream.on('end', () => resolve(Buffer.concat(chunks)));
    });

  const server = new SMTPServer({
    // Mail from the internet arrives unauthenticated; the reply token is the capability.
    authOptional: true,
    disabledCommands: ['AUTH', 'STARTTLS'],
    banner: 'Fieldchart reply intake',
    size: opts.maxBytes,
    logger: false,
    onRcptTo(address, _session, callback) {
      const token = replyTokenOf(address.address, opts.replyDomain);
      if (!token) return callback(new SmtpRefusal('5.1.1 No such recipient', 550));
      opts.messages.replyTokenKnown(token).then(
        (known) => callback(known ? undefined : new SmtpRefusal('5.1.1 No such recipient', 550)),
        (err: unknown) => {
          opts.log.error({ err: safeError(err) }, 'inbound mail: recipient check failed');
          callback(new SmtpRefusal('4.3.0 Try again later', 451));
        },
      );
    },
    onData(stream: SMTPServerDataStream, session: SMTPServerSession, callback) {
      readAll(stream)
        .then(async (raw) => {
          if (stream.sizeExceeded) throw new SmtpRefusal('5.3.4 Message too big', 552);
          const parsed = await PostalMime.parse(raw);
          const text = textOf(parsed);
          let stored = 0;
          for (const rcpt of session.envelope.rcptTo) {
            const token = replyTokenOf(rcpt.address, opts.replyDomain);
            if (!token) continue;
            const r = await opts.messages.receiveReply({ token, subject: parsed.subject?.slice(0, 500) ?? null, text });
            if (r) stored++;
          }
          opts.log.info({ bytes: raw.length, recipients: session.envelope.rcptTo.length, stored }, 'inbound mail received');
        })
        .then(
          () => callback(),
          (err: unknown) => {
            if (err instanceof SmtpRefusal) return callback(err);
            opts.log.error({ err: safeError(err) }, 'inbound mail: storing failed');
            callback(new SmtpRefusal('4.3.0 Try again later', 451));
          },
        );
    },
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  server.on('error', (err: unknown) => opts.log.error({ err: safeError(err) }, 'inbound SMTP server error'));
  const { port } = server.server.address() as AddressInfo;
  return {
    port,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
