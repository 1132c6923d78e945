import fs from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import type { FastifyBaseLogger } from 'fastify';
import { z } from 'zod';
import { AppError, BadRequest } from '../errors.ts';
import { safeError } from '../log-safety.ts';
import type { Progress, ProgressEvent } from '../progress.ts';
import { runOperation, type OperationContext } from './operations.ts';

export const adminSocketOf = (dataDir: string) => path.join(dataDir, 'admin.sock');

export type AdminReply = { ok: true; result: unknown } | { ok: false; error: { code: string; message: string } };

/**
 * A caller that accepts NDJSON hears progress while the operation runs: one
 * `{"progress":{…}}` line per event, then the reply as the last line (status 200 either way,
 * since the status line leaves before the outcome is known). Others get the reply alone.
 */
const NDJSON = 'application/x-ndjson';

/**
 * A local HTTP endpoint on a unix socket in the data dir (mode 0600: only the account that
 * runs the server may use it), through which the CLI runs operations on a live server's
 * embedded database.
 */
export async function startAdminSocket(
  socketPath: string,
  ctx: OperationContext,
  log: FastifyBaseLogger,
): Promise<{ close(): Promise<void> }> {
  await fs.rm(socketPath, { force: true });
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const streaming = req.headers.accept === NDJSON;
      if (streaming) res.writeHead(200, { 'content-type': NDJSON });
      const progress: Progress | undefined = streaming ? (event) => res.write(`${JSON.stringify({ progress: event })}\n`) : undefined;
      void (async () => {
        let reply: AdminReply;
        let status = 200;
        try {
          const match = /^\/ops\/([a-z.-]+)$/.exec(req.url ?? '');
          if (req.method !== 'POST' || !match?.[1]) throw new Error('POST /ops/<name> expected');
          let args: unknown = {};
          if (chunks.length) {
            try {
              args = JSON.parse(Buffer.concat(chunks).toString('utf8'));
            } catch (err) {
              if (err instanceof SyntaxError) throw new BadRequest('The request body is not valid JSON', 'bad_request');
              throw err;
            }
          }
          reply = { ok: true, result: await runOperation(ctx, match[1], args, progress) };
        } catch (err) {
          if (!(err instanceof AppError) && !(err instanceof z.ZodError)) {
            log.error({ err: safeError(err), operation: req.url }, 'admin operation failed');
          }
          status = err instanceof AppError ? err.statusCode : err instanceof z.ZodError ? 422 : 500;
          const code = err instanceof AppError ? err.code : err instanceof z.ZodError ? 'validation_failed' : 'internal_error';
          const message = err instanceof AppError || err instanceof z.ZodError ? err.message : 'internal error (see server log)';
          reply = { ok: false, error: { code, message } };
        }
        if (streaming) {
          res.end(`${JSON.stringify(reply)}\n`);
          return;
        }
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(reply));
      })();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, () => resolve());
  });
  await fs.chmod(socketPath, 0o600);
  return {
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }).then(() => fs.rm(socketPath, { force: true })),
  };
}

/** Sends one operation to a running server's admin socket; `onProgress` hears its progress events. */
export function callAdminSocket(
  socketPath: string,
  name: string,
  args: unknown,
  timeoutMs = 10 * 60_000,
  onProgress?: Progress,
): Promise<AdminReply> {
  return new Promise((resolve, reject) => {
    const body = JSON.stringify(args ?? {});
    const headers = { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...(onProgress ? { accept: NDJSON } : {}) };
    const req = http.request({ socketPath, path: `/ops/${name}`, method: 'POST', headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        text += c;
        if (!onProgress) return;
        // Complete lines are progress events until the reply, which is the last line.
        for (let nl = text.indexOf('\n'); nl >= 0; nl = text.indexOf('\n')) {
          const line = text.slice(0, nl);
          if (!line.startsWith('{"progress":')) break;
          text = text.slice(nl + 1);
          try {
            onProgress((JSON.parse(line) as { progress: ProgressEvent }).progress);
          } catch {
            // A progress line is only ever a hint; the reply decides the outcome.
          }
        }
      });
      res.on('end', () => {
        try {
          resolve(JSON.parse(text) as AdminReply);
        } catch (err) {
          reject(err instanceof Error ? err : new Error('bad admin reply'));
        }
      });
    });
    req.on('error', reject);
    // Long operations (key rotation re-encrypts every value) get minutes, not forever.
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`the server did not answer ${name} within ${timeoutMs} ms`)));
    req.end(body);
  });
}
