/**
 * The processes a fault run kills: the API server (`npm start`'s entry) and, on PostgreSQL, a
 * separate job worker (`fieldchart worker`; the server then runs none, WORKER_ENABLED=false).
 * `kill -9` and a restart with the same environment — the same port, the same data dir, the
 * same database — as a supervisor would do, timed from the kill until the new process is
 * ready (/readyz 200 for the server, "Fieldchart worker running" for the worker).
 *
 * A killed worker's jobs stay locked for graphile-worker's 4 hours unless released: on the
 * embedded database the restarted server unlocks them under the data dir's lock
 * (db/pglite-pg-pool.ts `unlockDeadWorkers`); on PostgreSQL the restarted worker's start-up
 * sweep finds the dead node's liveness key free and calls `force_unlock_workers` on its
 * worker ids (jobs/worker-liveness.ts). Nothing here unlocks anything itself.
 */
import { eventually } from '../../test/helpers/eventually.ts';
import { spawnServer, type ServerProcess } from '../../test/helpers/processes.ts';

export type NodeKind = 'server' | 'worker';

export interface Restarted {
  /** Kill → the process is gone (the kernel's part). */
  readonly exitMs: number;
  /** Kill → the new process is ready. */
  readonly readyMs: number;
}

export class LoadNode {
  private proc: ServerProcess;

  constructor(
    readonly kind: NodeKind,
    private readonly env: Record<string, string | undefined>,
    private readonly origin: string,
  ) {
    this.proc = this.spawn();
  }

  get process(): ServerProcess {
    return this.proc;
  }

  private spawn(): ServerProcess {
    // The worker's readiness is a log line, so it logs at info; the server's is /readyz.
    return this.kind === 'worker' ? spawnServer({ ...this.env, LOG_LEVEL: 'info' }, { via: 'worker' }) : spawnServer(this.env);
  }

  /** Resolves when the process serves; rejects if it exits first or the bound passes. */
  async ready(timeoutMs = 180_000): Promise<void> {
    const proc = this.proc;
    await eventually(
      async () => {
        if (proc.child.exitCode !== null || proc.child.signalCode !== null) {
          throw new Error(`the ${this.kind} exited: ${proc.stderr().slice(-2000)}`);
        }
        if (this.kind === 'worker') {
          if (!proc.logs().some((l) => l.msg === 'Fieldchart worker running')) throw new Error('worker not running yet');
          return;
        }
        const res = await fetch(`${this.origin}/readyz`, { signal: AbortSignal.timeout(5000) });
        if (res.status !== 200) throw new Error(`not ready: ${res.status}`);
      },
      { timeoutMs, intervalMs: 100 },
    );
  }

  /** `kill -9`, then the same command again; answers the timings. */
  async killAndRestart(): Promise<Restarted> {
    const killedAt = performance.now();
    process.kill(this.proc.pid, 'SIGKILL');
    const exit = await this.proc.exited;
    if (exit.signal !== 'SIGKILL') throw new Error(`the ${this.kind} ended with ${exit.code ?? exit.signal}, not SIGKILL`);
    const exitMs = performance.now() - killedAt;
    this.proc = this.spawn();
    await this.ready();
    return { exitMs, readyMs: performance.now() - killedAt };
  }

  /** Starts the process again after a graceful stop (no-op while it runs). */
  restartGracefully(): void {
    if (!this.alive()) this.proc = this.spawn();
  }

  /** A graceful stop (SIGTERM); SIGKILL if it has not ended within `graceMs`. */
  async stop(graceMs = 30_000): Promise<void> {
    const proc = this.proc;
    const timer = setTimeout(() => proc.child.kill('SIGKILL'), graceMs);
    await proc.stop();
    clearTimeout(timer);
  }

  alive(): boolean {
    return this.proc.child.exitCode === null && this.proc.child.signalCode === null;
  }
}
