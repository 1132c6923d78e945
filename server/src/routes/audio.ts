import type { IncomingMessage } from 'node:http';
import { z } from 'zod';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { Server as TusServer } from '@tus/server';
import { audioUuidParams, envelope, errorBody, visitAudioUploadFields, visitAudioUploadResult } from '@fieldchart/schema/api';
import { AppError } from '../errors.ts';
import { auditContextOf } from '../http/audit-context.ts';
import { principalOf } from '../http/authentication.ts';
import { readAudioMultipart, registerMultipart } from '../http/multipart.ts';
import { errors, ok } from '../http/reply.ts';
import type { Services } from '../services/index.ts';

const tags = ['Audio'];
const audioBytes = z.string().meta({ format: 'binary', description: 'The recording (Content-Type audio/mp4, audio/wav or audio/mpeg)' });
/** The tus endpoint, under the API prefix (docs/audio.md). */
export const TUS_PATH = '/uploads';

class RangeNotSatisfiable extends AppError {
  readonly statusCode = 416;
  constructor(size: number) {
    super('The requested range is outside the file', 'range_not_satisfiable', { 'content-range': `bytes */${size}` });
  }
}

/**
 * One `bytes=` range of a file of `size` bytes (RFC 9110 §14.1.2): null means "send it
 * all" (no header, another unit, several ranges, or bad syntax — all of which a server may
 * ignore); a range starting at or past the end is unsatisfiable.
 */
export function parseRange(header: string | undefined, size: number): { start: number; end: number } | null {
  if (!header) return null;
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === '' && m[2] === '')) return null;
  if (m[1] === '') {
    const suffix = Number(m[2]);
    if (suffix === 0 || size === 0) throw new RangeNotSatisfiable(size);
    return { start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(m[1]);
  const end = m[2] === '' ? size - 1 : Number(m[2]);
  if (m[2] !== '' && end < start) return null;
  if (start >= size) throw new RangeNotSatisfiable(size);
  return { start, end: Math.min(end, size - 1) };
}

export const audioRoutes: FastifyPluginAsyncZod<{ services: Services; apiPrefix: string }> = async (app, { services, apiPrefix }) => {
  const { config } = services;

  // Multipart is parsed in this scope only: JSON stays the only body type of the other routes.
  await app.register(async (scope) => {
    await registerMultipart(scope);
    scope.post('/visit-audio-upload', {
      config: { idempotentWrite: 'lazy' },
      schema: {
        tags,
        summary: 'Upload a visit recording (multipart: audio file, schedule_uuid)',
        description: `multipart/form-data with a file part \`audio\` (m4a, wav or mp3, decided from the bytes, not the name or declared type; at most ${config.audio.visitAudioMaxBytes} bytes) and a text part \`schedule_uuid\` (one of the caller's visits). Streamed encrypted to storage, never buffered; over the cap 413, not audio 422 naming \`audio\`, missing or invalid schedule_uuid 422 naming it, another clinician's visit 404 — and nothing is stored. \`url\` is the authorized download route (GET /audio/{uuid}, bearer token).`,
        consumes: ['multipart/form-data'],
        response: { 200: envelope(visitAudioUploadResult), ...errors(401, 404, 413, 422) },
      },
      handler: async (req) => {
        const ctx = await auditContextOf(req);
        const userId = principalOf(req).userId;
        const { fields, audio } = await readAudioMultipart(req, {
          fields: visitAudioUploadFields,
          maxBytes: config.audio.visitAudioMaxBytes,
          userId,
          audio: services.audio,
          check: (f) => services.audio.checkVisit(userId, f.schedule_uuid),
        });
        if (!audio) throw new Error('unreachable: the audio part is required');
        let stored;
        try {
          stored = await services.audio.commit(ctx, audio, { visitId: fields.schedule_uuid, purpose: 'visit_audio' });
        } catch (err) {
          await audio.discard();
          throw err;
        }
        return ok({ url: services.audio.downloadUrl(stored.uuid), uuid: stored.uuid, bytes: stored.bytes, format: stored.format }, 'Audio uploaded');
      },
    });
  });

  app.get('/audio/:uuid', {
    schema: {
      tags,
      summary: 'Download a stored recording (Range requests supported)',
      description:
        "The caller's own recordings only (another clinician's or an unknown uuid: 404). A single `Range: bytes=…` answers 206 with Content-Range; a range past the end 416. Never cached (Cache-Control: no-store). Every read is audited.",
      params: audioUuidParams,
      // A byte stream (sent as is, never through the JSON serializer): audio/mp4, audio/wav or audio/mpeg.
      response: { 200: audioBytes, 206: audioBytes, ...errors(401, 404), 416: errorBody },
    },
    handler: async (req, typedReply) => {
      // The body is a byte stream, not a JSON schema's value: the untyped reply sends it as is.
      const reply = typedReply as unknown as FastifyReply;
      const ctx = await auditContextOf(req);
      const userId = principalOf(req).userId;
      const meta = await services.audio.find(userId, req.params.uuid);
      // Unknown: `open` records the refused read and answers 404.
      const range = meta ? parseRange(req.headers.range, meta.bytes) : null;
      const file = await services.audio.open(ctx, userId, req.params.uuid, range ?? undefined);
      reply
        .header('content-type', file.contentType)
        .header('accept-ranges', 'bytes')
        .header('cache-control', 'no-store')
        .header('x-content-type-options', 'nosniff')
        .header('content-disposition', 'inline');
      if (range) {
        reply.code(206).header('content-range', `bytes ${range.start}-${range.end}/${file.bytes}`).header('content-length', String(range.end - range.start + 1));
      } else {
        reply.header('content-length', String(file.bytes));
      }
      return reply.send(file.stream);
    },
  });

  await app.register(tusRoutes, { services, path: `${apiPrefix}${TUS_PATH}` });
};

/**
 * tus 1.0 resumable uploads (@tus/server) with the encrypted data store of services/audio.
 * Every request carries the bearer token (the API's authentication hook runs first); an
 * upload id belongs to the user who created it: anyone else gets 404 for it.
 */
async function tusRoutes(app: FastifyInstance, opts: { services: Services; path: string }) {
  const { services } = opts;
  const store = services.audio.uploads;
  const owners = new WeakMap<IncomingMessage, string>();
  const userOf = (req: unknown): string => {
    const node = (req as { runtime?: { node?: { req?: IncomingMessage } } }).runtime?.node?.req;
    const user = node ? owners.get(node) : undefined;
    if (!user) throw { status_code: 401, body: 'Unauthenticated\n' };
    return user;
  };
  const tus = new TusServer({
    path: opts.path,
    datastore: store,
    maxSize: services.config.audio.aiAudioMaxBytes,
    relativeLocation: true,
    // Browsers may upload from the configured origins only (tus would otherwise answer `*`).
    allowedOrigins: (origin) => services.config.corsOrigins.includes(origin),
    namingFunction: (req) => store.nameFor(userOf(req)),
    onIncomingRequest: async (req, uploadId) => {
      const user = userOf(req);
      if (req.method === 'POST') return;
      if ((await store.ownerOf(uploadId)) !== user) throw { status_code: 404, body: 'Upload not found\n' };
    },
    // Client metadata (file names can be PHI) is dropped by the store; nothing else to check.
  });

  // The tus handler reads the raw body itself: no parser may consume it.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_req, _payload, done) => done(null, undefined));

  const handle = async (req: FastifyRequest, reply: FastifyReply) => {
    if (req.method !== 'OPTIONS') owners.set(req.raw, principalOf(req).userId);
    // The headers hooks set so far (security headers, CORS) go out with tus's own answer.
    for (const [name, value] of Object.entries(reply.getHeaders())) if (value !== undefined) reply.raw.setHeader(name, value);
    reply.raw.setHeader('cache-control', 'no-store');
    reply.hijack();
    try {
      await tus.handle(req.raw, reply.raw);
    } catch (err) {
      req.log.error({ err: { message: (err as Error).message } }, 'tus request failed');
      if (!reply.raw.headersSent) reply.raw.writeHead(500).end();
      else reply.raw.destroy();
    }
  };
  const hidden = { hide: true };
  app.route({ method: 'POST', url: '/uploads', schema: hidden, handler: handle });
  app.route({ method: ['HEAD', 'PATCH', 'DELETE'], url: '/uploads/:id', schema: hidden, handler: handle });
  app.route({ method: 'OPTIONS', url: '/uploads', schema: hidden, config: { public: true }, handler: handle });
  app.route({ method: 'OPTIONS', url: '/uploads/:id', schema: hidden, config: { public: true }, handler: handle });
}
