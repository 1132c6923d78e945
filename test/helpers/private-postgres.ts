/**
 * A PostgreSQL 15 cluster of the test's own, for faults that cannot be played on the shared
 * one (CI and other suites use it): stopping, restarting, killing the database itself.
 *
 * PostgreSQL refuses to run as root, so when the test runs as root the binaries run as the
 * `postgres` user (`runuser`) on a temp data dir it owns. Trust auth on 127.0.0.1 and a unix
 * socket in the temp dir; a free port. The cluster is stopped by `destroy()`, and — should the
 * test process end without it (a failed `before`, an uncaught error) — killed on exit.
 */
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from './processes.ts';

const BIN = process.env.POSTGRES_BIN_DIR ?? '/usr/lib/postgresql/15/bin';

export interface PrivatePostgres {
  /** `postgres://postgres@127.0.0.1:<port>/postgres` */
  readonly url: string;
  readonly port: number;
  /** `pg_ctl stop -m fast`: sessions are ended (57P01), new connections refused. */
  stop(): Promise<void>;
  start(): Promise<void>;
  /** `pg_ctl restart -m fast`. */
  restart(): Promise<void>;
  /** Stops the cluster (immediately) and removes its files. Safe to call twice. */
  destroy(): Promise<void>;
}

/** Why a private cluster cannot run here, or null when it can. */
export function privatePostgresUnavailable(): string | null {
  if (!fs.existsSync(path.join(BIN, 'pg_ctl'))) return `no PostgreSQL binaries in ${BIN}`;
  if (process.getuid?.() === 0 && spawnSync('id', ['-u', 'postgres']).status !== 0) return 'running as root and there is no postgres user';
  return null;
}

export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const root = process.getuid?.() === 0;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fieldchart-pg-'));
  const dataDir = path.join(dir, 'data');
  const logFile = path.join(dir, 'server.log');
  if (root) {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    fs.chownSync(dir, uid, gid);
  }
  const argvOf = (tool: string, args: readonly string[]): [string, string[]] =>
    root ? ['runuser', ['-u', 'postgres', '--', path.join(BIN, tool), ...args]] : [path.join(BIN, tool), [...args]];
  const failure = (tool: string, args: readonly string[], why: string) => {
    const log = fs.existsSync(logFile) ? fs.readFileSync(logFile, 'utf8').slice(-2000) : '';
    return new Error(`${tool} ${args.join(' ')} failed: ${why}\n${log}`);
  };
  // Asynchronous: the test's load and (often) the server under test share this event loop.
  const run = (tool: string, args: readonly string[]) =>
    new Promise<void>((resolve, reject) => {
      const [command, argv] = argvOf(tool, args);
      execFile(command, argv, { cwd: dir, timeout: 120_000 }, (err, stdout, stderr) =>
        err ? reject(failure(tool, args, `${err.message} ${stderr}${stdout}`)) : resolve(),
      );
    });
  const runSync = (tool: string, args: readonly string[]) => {
    const [command, argv] = argvOf(tool, args);
    const r = spawnSync(command, argv, { cwd: dir, encoding: 'utf8', timeout: 60_000 });
    if (r.status !== 0) throw failure(tool, args, `${r.status ?? r.signal} ${r.stderr}${r.stdout}`);
  };

  let destroyed = false;
  // The last resort: a test process that ends without destroy() leaves no cluster running.
  const onExit = () => {
    if (destroyed) return;
    try {
      runSync('pg_ctl', ['stop', '-D', dataDir, '-m', 'immediate', '-w']);
    } catch {
      killPostmaster(dataDir);
    }
    fs.rmSync(dir, { recursive: true, force: true });
  };
  process.on('exit', onExit);

  const port = await freePort();
  try {
    await run('initdb', ['-D', dataDir, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8', '--locale=C']);
  } catch (err) {
    process.off('exit', onExit);
    fs.rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c max_connections=200`;
  const start = () => run('pg_ctl', ['start', '-D', dataDir, '-l', logFile, '-w', '-t', '60', '-o', options]);
  try {
    await start();
  } catch (err) {
    onExit();
    process.off('exit', onExit);
    throw err;
  }

  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    async stop() {
      await run('pg_ctl', ['stop', '-D', dataDir, '-m', 'fast', '-w', '-t', '60']);
    },
    async start() {
      await start();
    },
    async restart() {
      await run('pg_ctl', ['restart', '-D', dataDir, '-m', 'fast', '-w', '-t', '60', '-l', logFile, '-o', options]);
    },
    async destroy() {
      if (destroyed) return;
      try {
        await run('pg_ctl', ['stop', '-D', dataDir, '-m', 'immediate', '-w', '-t', '30']);
      } catch {
        killPostmaster(dataDir);
      }
      destroyed = true;
      process.off('exit', onExit);
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** SIGKILL to the postmaster named in the data dir's pid file (its children follow it). */
function killPostmaster(dataDir: string): void {
  try {
    const pid = Number(fs.readFileSync(path.join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
    if (pid > 0) process.kill(pid, 'SIGKILL');
  } catch {
    // no pid file: nothing runs
  }
}
