import { Logger, run, runMigrations, type Runner, type Task, type TaskList } from 'graphile-worker';
import type { Pool } from 'pg';
import type { FastifyBaseLogger } from 'fastify';
import { redactText, safeError } from '../log-safety.ts';
import type { Services } from '../services/index.ts';
import { taskPayloads, type TaskName } from './task-map.ts';
import type { JobHandler, JobRun } from './job-handler.ts';
import { cleanupExpired } from './cleanup-expired.ts';
import { aiProcessAudio } from './ai-process-audio.ts';
import { sendMail } from './send-mail.ts';
import { pushNotification, pushSend } from './push-notification.ts';
import { retryJobQueueWritesWhileDatabaseAway } from './retry-connection-errors.ts';

const handlers: { [K in TaskName]: JobHandler<K> } = {
  send_mail: sendMail,
  cleanup_expired: cleanupExpired,
  push_notification: pushNotification,
  push_send: pushSend,
  ai_process_audio: aiProcessAudio,
};

function workerLogger(log: FastifyBaseLogger): Logger {
  return new Logger((scope) => (level, message, meta) => {
    // Identifiers and a redacted error only: a job's payload and raw error text stay out.
    const m = meta as { job?: { id?: unknown; task_identifier?: unknown }; error?: unknown } | undefined;
    const fields = {
      worker: scope.workerId,
      task: scope.taskIdentifier ?? m?.job?.task_identifier,
      job: scope.jobId ?? m?.job?.id,
      ...(m?.error ? { err: safeError(m.error) } : {}),
    };
    const text = redactText(message);
    if (level === 'error') log.error(fields, text);
    else if (level === 'warning') log.warn(fields, text);
    else if (level === 'info') log.info(fields, text);
    else log.debug(fields, text);
  });
}

const silentLogger = new Logger(() => () => {});

/** graphile-worker's own tables; run at boot on every node, before anything enqueues. */
export async function migrateJobQueue(pgPool: Pool, log?: FastifyBaseLogger): Promise<void> {
  await runMigrations({ pgPool, logger: log ? workerLogger(log) : silentLogger });
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
  /** graphile-worker's events (worker-liveness.ts records worker ids from them). */
  events?: import('node:events').EventEmitter;
}): Promise<Worker> {
  const taskList: TaskList = {};
  for (const name of Object.keys(handlers) as TaskName[]) {
    const task: Task = async (payload, helpers) => {
      const parsed = taskPayloads[name].parse(payload);
      const run: JobRun = { attempts: helpers.job.attempts, maxAttempts: helpers.job.max_attempts, signal: helpers.abortSignal };
      await (handlers[name] as JobHandler<TaskName>)(opts.services, parsed, run);
    };
    taskList[name] = task;
  }
  retryJobQueueWritesWhileDatabaseAway();
  let runner: Runner | null = await run({
    pgPool: opts.pgPool,
    taskList,
    concurrency: opts.concurrency,
    noHandleSignals: true,
    pollInterval: 2000,
    logger: workerLogger(opts.log),
    crontab: '17 * * * * cleanup_expired ?max=1',
    ...(opts.events ? { events: opts.events as NonNullable<Parameters<typeof run>[0]['events']> } : {}),
  });
  let stopped = false;
  void runner.promise.then(
    () => {
      stopped = true;
    },
    (err: unknown) => {
      stopped = true;
      opts.log.error({ err: safeError(err) }, 'job worker stopped with an error');
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
