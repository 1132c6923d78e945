import type { z } from 'zod';
import type { Progress } from '../progress.ts';
import type { OperationContext } from './operation-context.ts';

/**
 * One operator command: its argument schema and what runs it. A module of its own so the
 * operation tables can share `op` without importing operations.ts.
 */
export interface Operation<A extends z.ZodType, R = unknown> {
  readonly args: A;
  /** `progress` hears how far a long operation is (a no-op when nobody listens). */
  run(ctx: OperationContext, args: z.infer<A>, progress: Progress): Promise<R>;
}

export const op = <A extends z.ZodType, R>(args: A, run: (ctx: OperationContext, args: z.infer<A>, progress: Progress) => Promise<R>): Operation<A, R> => ({
  args,
  run,
});
