import { z } from 'zod';
import type { OperationContext } from './operations.ts';

/** Same shape as operations.ts's `op`; kept local so this module does not import that one at runtime. */
const op = <A extends z.ZodType, R>(args: A, run: (ctx: OperationContext, args: z.infer<A>) => Promise<R>) => ({ args, run });

/** `fieldchart seed --demo`: the demo clinician and caseload (server/src/services/seed/). */
export const seedOperations = {
  'seed.demo': op(z.object({}), (ctx) => ctx.services.demoSeed.run(ctx.services)),
} as const;
