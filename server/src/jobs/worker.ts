import { EventEmitter } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { Logger, run, runMigrations, type Runner, type Task, type TaskList, type WorkerPool } from 'graphile-worker';
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
  /**
   * How long `stop()` may take. Running jobs are asked to stop (their abort signal) halfway;
   * one still running at the end is failed, to be retried on this or another node, so that a
   * job waiting on a stalled outside service (SMTP, push) cannot hold the shutdown past its
   * grace. Default 8 s.
   */
  stopWithinMs?: number;
}): Promise<Worker> {
  const stopWithinMs = opts.stopWithinMs ?? 8000;
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
  // The runner's own pools, for failing their jobs when a stop runs out of time: once a graceful
  // stop has begun, the runner's `kill()` finds its pool inactive and does nothing.
  const events = opts.events ?? new EventEmitter();
  const pools = new Set<WorkerPool>();
  const onPool = ({ workerPool }: { workerPool: WorkerPool }) => pools.add(workerPool);
  events.on('pool:create', onPool);
  let runner: Runner | null = await run({
    pgPool: opts.pgPool,
    taskList,
    concurrency: opts.concurrency,
    noHandleSignals: true,
    pollInterval: 2000,
    gracefulShutdownAbortTimeout: Math.floor(stopWithinMs / 2),
    logger: workerLogger(opts.log),
    crontab: '17 * * * * cleanup_expired ?max=1',
    events: events as NonNullable<Parameters<typeof run>[0]['events']>,
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
      // A graceful stop that fails after the deadline won the race is still logged, not left unhandled.
      const graceful = r.stop().then(
        () => true,
        (err: unknown) => {
          opts.log.warn({ err: safeError(err) }, 'job worker: the graceful stop failed');
          return true;
        },
      );
      const deadline = new AbortController();
      const done = await Promise.race([graceful, sleep(stopWithinMs, false, { signal: deadline.signal })]);
      deadline.abort();
      events.off('pool:create', onPool);
      if (done) return;
      opts.log.warn({ within_ms: stopWithinMs }, 'job worker: jobs still running when the stop ran out of time; failed, to be retried');
      // graphile-worker's forceful shutdown records each running job as a failed attempt and
      // unlocks it (its retry schedule applies); the job's promise is abandoned.
      await Promise.allSettled([...pools].map((pool) => pool.forcefulShutdown('the server is shutting down')));
    },
  };
}
