import { Logger, run, runMigrations, type Runner, type Task, type TaskList } from 'graphile-worker';
import type { Pool } from 'pg';
import type { FastifyBaseLogger } from 'fastify';
import type { Services } from '../services/index.ts';
import { taskPayloads, type TaskName } from './task-map.ts';
import { cleanupExpired } from './cleanup-expired.ts';
import { sendMail } from './send-mail.ts';

export type JobHandler<T extends TaskName> = (services: Services, payload: import('./task-map.ts').TaskPayload<T>) => Promise<void>;

const handlers: { [K in TaskName]: JobHandler<K> } = {
  send_mail: sendMail,
  cleanup_expired: cleanupExpired,
};

function workerLogger(log: FastifyBaseLogger): Logger {
  return new Logger((scope) => (level, message, meta) => {
    // Only identifiers: a job's payload and error text stay out of the log.
    const job = (meta as { job?: { id?: unknown; task_identifier?: unknown } } | undefined)?.job;
    const fields = { worker: scope.workerId, task: scope.taskIdentifier ?? job?.task_identifier, job: scope.jobId ?? job?.id };
    if (level === 'error') log.error(fields, message);
    else if (level === 'warning') log.warn(fields, message);
    else if (level === 'info') log.info(fields, message);
    else log.debug(fields, message);
  });
}

/** graphile-worker's own tables; run at boot on every node, before anything enqueues. */
export async function migrateJobQueue(pgPool: Pool, log: FastifyBaseLogger): Promise<void> {
  await runMigrations({ pgPool, logger: workerLogger(log) });
}

export interface Worker {
  running(): boolean;
  stop(): Promise<void>;
}

/** Each task validates its payload, then calls services; every task is safe to run twice. */
export async function startWorker(opts: {
  pgPool: Pool;
  services: Services;
  concurrency: number;
  log: FastifyBaseLogger;
}): Promise<Worker> {
  const taskList: TaskList = {};
  for (const name of Object.keys(handlers) as TaskName[]) {
    const task: Task = async (payload) => {
      const parsed = taskPayloads[name].parse(payload);
      await (handlers[name] as JobHandler<TaskName>)(opts.services, parsed);
    };
    taskList[name] = task;
  }
  let runner: Runner | null = await run({
    pgPool: opts.pgPool,
    taskList,
    concurrency: opts.concurrency,
    noHandleSignals: true,
    pollInterval: 2000,
    logger: workerLogger(opts.log),
    crontab: '17 * * * * cleanup_expired ?max=1',
  });
  let stopped = false;
  void runner.promise.then(
    () => {
      stopped = true;
    },
    (err: unknown) => {
      stopped = true;
      opts.log.error({ err: err instanceof Error ? { message: err.message } : {} }, 'job worker stopped with an error');
    },
  );
  return {
    running: () => runner !== null && !stopped,
    async stop() {
      if (!runner) return;
      const r = runner;
      runner = null;
      await r.stop();
    },
  };
}
