import type { Command } from 'commander';
import { limit } from '../options.ts';
import { fields, table } from '../output.ts';
import { runAndPrint } from '../run.ts';

export function registerMail(program: Command): void {
  const mail = program
    .command('mail')
    .description('Outgoing mail: the outbox, and the .eml copies saved under the data dir when SMTP_URL is unset');

  mail
    .command('list')
    .description('List outgoing mail, newest first')
    .option('-n, --limit <n>', 'at most this many messages (1-1000)', limit, 50)
    .action((opts: { limit: number }, cmd: Command) =>
      runAndPrint(cmd, 'mail.list', { limit: opts.limit }, (items) =>
        items.length === 0
          ? 'No mail.\n'
          : table(items, [
              ['ID', (m) => m.id],
              ['TO', (m) => m.to],
              ['KIND', (m) => m.kind],
              ['STATUS', (m) => m.status],
              ['CREATED', (m) => m.created_at],
              ['SUBJECT', (m) => m.subject],
            ]),
      ),
    );

  mail
    .command('show')
    .description('Show one message; prints the saved .eml when the message was stored')
    .argument('<id>', 'the message id (from `mail list`)')
    .action((id: string, _opts: unknown, cmd: Command) =>
      runAndPrint(cmd, 'mail.show', { id }, (m) => {
        const head = fields(m as unknown as Record<string, unknown>, [
          'id',
          'to',
          'subject',
          'kind',
          'status',
          'attempts',
          'created_at',
          'sent_at',
          'stored_as',
          'last_error',
        ]);
        const body = m.eml ?? m.text;
        return `${head}\n${body === null ? '(the message body is not stored: it was sent over SMTP)\n' : body.endsWith('\n') ? body : `${body}\n`}`;
      }),
    );
}
