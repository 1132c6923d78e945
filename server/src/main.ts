import fs from 'node:fs';
import { pathToFileURL } from 'node:url';
import { API_PREFIX } from './app.ts';
import { ConfigError, loadConfig } from './config.ts';
import { DataDirBusy } from './db/data-dir-lock.ts';
import { FIELD_APP_PREFIX } from './http/field-app.ts';
import { startRuntime } from './runtime.ts';

/** `npm start`: the server on the configured database, until SIGTERM or SIGINT. */
export async function serve(env: Record<string, string | undefined> = process.env): Promise<void> {
  let config;
  try {
    config = loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(78); // EX_CONFIG
    }
    throw err;
  }
  let runtime;
  try {
    runtime = await startRuntime(config);
  } catch (err) {
    if (err instanceof DataDirBusy) {
      process.stderr.write(`${err.message}: ${config.dataDir}\nStop it first, or use another FIELDCHART_DATA_DIR.\n`);
      process.exit(75); // EX_TEMPFAIL
    }
    throw err;
  }
  const rt = runtime;
  rt.app.log.info(
    { database: config.database.kind, dataDir: config.dataDir, worker: config.worker.enabled },
    `Fieldchart listening on ${rt.url} (field app at ${rt.url}${FIELD_APP_PREFIX}, API at ${rt.url}${API_PREFIX}, docs at ${rt.url}/docs)`,
  );
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    rt.app.log.info({ signal }, 'shutting down: finishing in-flight requests');
    const force = setTimeout(() => {
      rt.app.log.error('shutdown grace period passed; exiting');
      process.exit(1);
    }, config.shutdownGraceMs);
    force.unref();
    rt.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

/** Run as the entry point? Compared as resolved URLs: a checkout path with a space is
 * percent-encoded in import.meta.url and a symlinked one resolved, so a plain
 * `file://${argv[1]}` would not match and the server would silently exit 0. */
function isEntryPoint(): boolean {
  const entry = process.argv[1];
  if (!entry) return false;
  try {
    return import.meta.url === pathToFileURL(fs.realpathSync(entry)).href;
  } catch {
    return false;
  }
}

if (isEntryPoint()) {
  await serve();
}
