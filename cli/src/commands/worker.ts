import type { Command } from 'commander';
import { DataDirBusy, startWorkerNode } from '@fieldchart/server';
import { CliError, EXIT } from '../errors.ts';
import { configFromEnvironment } from '../run.ts';

/**
 * `fieldchart worker`: a job-queue worker node (`startWorkerNode` of `@fieldchart/server`) configured by
 * the server's environment; SIGTERM or SIGINT stops it gracefully (running jobs finish, within
 * SHUTDOWN_GRACE_MS).
 */
export function registerWorker(program: Command): void {
  program
    .command('worker')
    .description(
      'Run background jobs (AI pipeline, mail, cleanup) without the HTTP server: on PostgreSQL beside any number of API nodes, ' +
        'on the embedded database only while no server holds the data dir. SIGTERM stops it gracefully.',
    )
    .action(async () => {
      const config = configFromEnvironment();
      let node;
      try {
        node = await startWorkerNode(config);
      } catch (err) {
        if (err instanceof DataDirBusy) {
          throw new CliError(
            `${err.message}: ${config.dataDir}; a running server runs the jobs itself (WORKER_ENABLED), or use PostgreSQL (DATABASE_URL) for separate worker nodes`,
            'data_dir_busy',
            EXIT.busy,
          );
        }
        throw err;
      }
      const n = node;
      await new Promise<void>((resolve) => {
        let stopping = false;
        const stop = (signal: string) => {
          if (stopping) return;
          stopping = true;
          n.log.info({ signal }, 'worker stopping: finishing running jobs');
          const force = setTimeout(() => {
            n.log.error('shutdown grace period passed; exiting');
            process.exit(1);
          }, config.shutdownGraceMs);
          force.unref();
          void n.stop().then(resolve, resolve);
        };
        process.on('SIGTERM', () => stop('SIGTERM'));
        process.on('SIGINT', () => stop('SIGINT'));
        void n.done.then(() => stop('worker stopped'));
      });
    });
}
