import fs from 'node:fs/promises';
import { z } from 'zod';
import { NotFound } from '../errors.ts';
import { noProgress, type Progress } from '../progress.ts';
import { clinicalOperations } from './clinical-operations.ts';
import { deviceOperations } from './device-operations.ts';
import { op, type Operation } from './operation.ts';
import type { OperationContext } from './operation-context.ts';
import { organizationOperations } from './organization-operations.ts';
import { seedOperations } from './seed-operations.ts';

export { operationContext, type OperationContext } from './operation-context.ts';

/**
 * Operator commands as data: the CLI runs them against the database itself, or — when a
 * server holds the embedded database — sends them over the admin socket and the server runs
 * the very same function. One implementation, two transports.
 */
export const operations = {
  'migrate.status': op(z.object({}), (ctx) => ctx.migrationStatus()),
  'user.list': op(
    z.object({ search: z.string().optional(), disabled: z.boolean().optional(), limit: z.number().int().min(1).max(1000).optional() }),
    (ctx, a) => ctx.services.users.list(a),
  ),
  'user.show': op(z.object({ user: z.string().min(1) }), (ctx, a) => ctx.services.users.lookup(a.user)),
  'user.disable': op(z.object({ user: z.string().min(1), enable: z.boolean().optional() }), (ctx, a) =>
    ctx.services.users.setDisabled(a.user, !a.enable),
  ),
  'mail.list': op(z.object({ limit: z.number().int().min(1).max(1000).optional() }), (ctx, a) => ctx.services.mail.list(a.limit)),
  'mail.show': op(z.object({ id: z.string().min(1) }), async (ctx, a) => {
    // Not a uuid cannot name a mail; asking the database would be a type error, not a miss.
    const mail = z.uuid().safeParse(a.id).success ? await ctx.services.mail.get(a.id) : null;
    if (!mail) throw new NotFound('No mail with this id', 'mail_not_found');
    // The sent copy in the .eml sink is the message as delivered.
    const eml = mail.stored_as ? await fs.readFile(mail.stored_as, 'utf8').catch(() => null) : null;
    return { ...mail, eml };
  }),
  'maintenance.purge': op(z.object({}), (ctx) => ctx.services.maintenance.purgeExpired()),
  'db.backup': op(z.object({ file: z.string().min(1) }), (ctx, a, progress) => ctx.backup(a.file, progress)),
  ...organizationOperations,
  ...seedOperations,
  ...clinicalOperations,
  ...deviceOperations,
} as const;

export type OperationName = keyof typeof operations;
export type OperationArgs<N extends OperationName> = z.input<(typeof operations)[N]['args']>;
/** What an operation answers (over the admin socket: the same, as JSON). */
export type OperationResult<N extends OperationName> = Awaited<ReturnType<(typeof operations)[N]['run']>>;

export async function runOperation(ctx: OperationContext, name: string, args: unknown, progress: Progress = noProgress): Promise<unknown> {
  const operation = (operations as Record<string, Operation<z.ZodType>>)[name];
  if (!operation) throw new NotFound(`Unknown operation ${name}`, 'unknown_operation');
  return operation.run(ctx, operation.args.parse(args ?? {}), progress);
}
