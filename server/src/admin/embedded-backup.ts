import fs from 'node:fs/promises';
import path from 'node:path';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import { PGlite } from '@electric-sql/pglite';
import type { EmbeddedPglite } from '../db/pglite-thread-client.ts';
import { Invalid } from '../errors.ts';
import { noProgress, type Progress } from '../progress.ts';

const MIB = 1024 * 1024;

export interface BackupResult {
  readonly file: string;
  readonly bytes: number;
  readonly took_ms: number;
}

/**
 * A consistent copy of the embedded database (`fieldchart backup`): a checkpoint, then PGlite's
 * own dump of its data directory (gzipped tar), taken while no other query runs. On a running
 * server this runs inside it (admin socket), between two of its queries: a transaction still
 * open at that instant is rolled back when the copy is opened, exactly as after a crash, and
 * everything committed is in it. Written to a temporary file, then renamed, owner-only.
 */
export async function backupEmbedded(pglite: EmbeddedPglite | null, file: string, progress: Progress = noProgress): Promise<BackupResult> {
  if (!pglite) throw new Invalid('backup copies the embedded database; on PostgreSQL use pg_dump (docs/operations.md)', {}, 'not_embedded');
  if (!path.isAbsolute(file)) throw new Invalid('the backup file must be an absolute path', {}, 'invalid_path');
  const started = Date.now();
  // PGlite dumps in one call, so the steps are the unit: checkpoint, dump, write, sync.
  const step = (done: number) => progress({ step: 'copy', done, total: 4 });
  step(0);
  await pglite.exec('CHECKPOINT');
  step(1);
  const dump = await pglite.dumpDataDir('gzip');
  const bytes = Buffer.from(await dump.arrayBuffer());
  step(2);
  const tmp = `${file}.${process.pid}.tmp`;
  await fs.writeFile(tmp, bytes, { mode: 0o600 });
  step(3);
  const handle = await fs.open(tmp, 'r');
  await handle.sync().finally(() => handle.close());
  await fs.rename(tmp, file);
  step(4);
  return { file, bytes: bytes.length, took_ms: Date.now() - started };
}

export interface RestoreResult {
  readonly restored: string;
  /** Where the database that was there before now is (kept, never deleted). */
  readonly previous: string | null;
}

/**
 * `fieldchart restore`: the caller holds the data dir's lock (no server runs). The backup is
 * loaded into a directory beside the live one and opened once (a damaged file fails here,
 * with the live database untouched); then the live directory is moved aside and the restored
 * one takes its place.
 */
export async function restoreEmbedded(pgdata: string, file: string, progress: (line: string) => void, meter: Progress = noProgress): Promise<RestoreResult> {
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  const staging = `${pgdata}.restoring-${stamp}`;
  progress(`checking ${file}`);
  const unusable = (err: unknown) => new Invalid(`not a usable backup: ${(err as Error).message}`, {}, 'invalid_backup');
  // Read once: PGlite loads it from memory after the check.
  const bytes = await fs.readFile(file).catch((err: unknown) => {
    throw unusable(err);
  });
  // The whole gzip stream, CRC and length included, before PGlite sees it: its loader throws a
  // truncated archive's error where no caller can catch it. The long part of a large restore,
  // metered in MiB.
  const total = Math.ceil(bytes.length / MIB);
  function* inMiB() {
    for (let at = 0; at < bytes.length; at += MIB) {
      meter({ step: 'check (MiB)', done: at / MIB, total });
      yield bytes.subarray(at, at + MIB);
    }
    meter({ step: 'check (MiB)', done: total, total });
  }
  await pipeline(Readable.from(inMiB()), createGunzip(), new Writable({ write: (_chunk, _enc, done) => done() })).catch((err: unknown) => {
    throw unusable(err);
  });
  const blob = new Blob([bytes]);
  progress(`loading the backup into ${staging}`);
  try {
    const db = await PGlite.create({ dataDir: staging, loadDataDir: blob });
    await db.query('select 1');
    await db.close();
  } catch (err) {
    await fs.rm(staging, { recursive: true, force: true });
    throw unusable(err);
  }
  let previous: string | null = `${pgdata}.before-restore-${stamp}`;
  try {
    await fs.rename(pgdata, previous);
    progress(`kept the previous database at ${previous}`);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    previous = null;
  }
  await fs.rename(staging, pgdata);
  progress(`restored into ${pgdata}`);
  return { restored: pgdata, previous };
}
