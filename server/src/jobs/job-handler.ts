import type { Services } from '../services/index.ts';
import type { TaskName, TaskPayload } from './task-map.ts';

/**
 * The shape of one task (a file per task beside this one). A module of its own so the task
 * files and the worker that maps names to them both depend on it and not on each other.
 */

/** What a handler may know of its job run: graphile-worker's attempt counters and abort signal. */
export interface JobRun {
  readonly attempts: number;
  readonly maxAttempts: number;
  /** Aborted when the worker shuts down gracefully. */
  readonly signal: AbortSignal | undefined;
}

export type JobHandler<T extends TaskName> = (services: Services, payload: TaskPayload<T>, run: JobRun) => Promise<void>;
