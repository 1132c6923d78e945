/**
 * The undo list of a process that starts things (the server's runtime, a worker node): each
 * step pushed as it is started, run in reverse at the stop. A stop has a grace period, after
 * which the process exits without closing what is left, so every step that fails or drags
 * is logged by name: one that is still running after `slowMs` is named then, not only once it
 * ends (a step that never ends would otherwise leave nothing but the grace period's line).
 */
import type { FastifyBaseLogger } from 'fastify';
import { safeError } from './log-safety.ts';

/** A step still running after this long is logged with its name (the whole stop has SHUTDOWN_GRACE_MS). */
export const SLOW_SHUTDOWN_STEP_MS = 2000;

export type StepLog = Pick<FastifyBaseLogger, 'warn'>;

export interface ShutdownSteps {
  add(step: string, undo: () => Promise<void>): void;
  /** Undoes every step, last first, once; later calls return the same promise. Never rejects. */
  run(): Promise<void>;
  /** Milliseconds since `run()` was first called: a step's deadline counts the steps before it. */
  elapsedMs(): number;
}

/** `log()` is read at the stop: the runtime has a logger only once its app is built. */
export function shutdownSteps(log: () => StepLog | null, slowMs = SLOW_SHUTDOWN_STEP_MS): ShutdownSteps {
  const steps: Array<readonly [step: string, undo: () => Promise<void>]> = [];
  let running: Promise<void> | null = null;
  let startedAt = 0;
  const undoAll = async () => {
    for (const [step, undo] of steps.splice(0).reverse()) {
      const started = performance.now();
      const slow = setTimeout(() => log()?.warn({ step, ms: Math.round(performance.now() - started) }, 'shutdown step still running'), slowMs);
      slow.unref();
      try {
        await undo();
      } catch (err) {
        log()?.warn({ err: safeError(err), step }, 'shutdown step failed');
      } finally {
        clearTimeout(slow);
      }
      const ms = Math.round(performance.now() - started);
      if (ms >= slowMs) log()?.warn({ step, ms }, 'shutdown step was slow');
    }
  };
  return {
    add: (step, undo) => void steps.push([step, undo]),
    run: () => {
      startedAt ||= performance.now();
      return (running ??= undoAll());
    },
    elapsedMs: () => (startedAt === 0 ? 0 : performance.now() - startedAt),
  };
}
