import './http/validation-messages.ts';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import pino from 'pino';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyServerOptions, type RouteOptions } from 'fastify';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import websocket from '@fastify/websocket';
import { errorBody, MAX_PATH_PARAM } from '@fieldchart/schema/api';
import { CLOSE_CODES } from '@fieldchart/schema/sync';
import type { Clock } from './clock.ts';
import type { Db } from './db/database.ts';
import { jsonSchemaTransform, jsonSchemaTransformObject, validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Config } from './config.ts';
import { API_PREFIX } from './http/api-prefix.ts';
import { authentication } from './http/authentication.ts';
import { databaseGate } from './http/database-gate.ts';
import { defaultFieldAppDir, fieldApp } from './http/field-app.ts';
import { probePostgres, PROBE_TIMEOUT_MS } from './db/reachability.ts';
import { installErrorHandling, sendFrameworkError, writeClientError } from './http/error-handler.ts';
import { idempotency } from './http/idempotency.ts';
import { responseSerializerCompiler } from './http/response-serializer.ts';
import { securityHeaders } from './http/security-headers.ts';
import type { Metrics } from './metrics/metrics.ts';
import { metricsPlugin } from './metrics/metrics-http.ts';
import { addressLimitCheck, requestRateLimit } from './http/rate-limit.ts';
import { accountRoutes } from './routes/account.ts';
import { aiPipelineRoutes } from './routes/ai.ts';
import { audioRoutes } from './routes/audio.ts';
import { aiChecklistRoutes } from './routes/ai-checklists.ts';
import { authRoutes } from './routes/auth.ts';
import { claimRoutes } from './routes/claims.ts';
import { healthRoutes, type HealthProbe } from './routes/health.ts';
import { invitationRoutes } from './routes/invitations.ts';
import { messageRoutes } from './routes/messages.ts';
import { notificationRoutes } from './routes/notifications.ts';
import { organizationRoutes } from './routes/organizations.ts';
import { patientRoutes } from './routes/patients.ts';
import { reportRoutes } from './routes/reports.ts';
import { schedulingRoutes } from './routes/scheduling.ts';
import { subscriptionRoutes } from './routes/subscription.ts';
import { visitRoutes } from './routes/visits.ts';
import type { Services } from './services/index.ts';
import { syncRoutes } from './routes/sync.ts';
import { createSyncHub, MAX_FRAME_BYTES, type SyncHub } from './sync/hub.ts';
import { syncHooksOf } from './sync/service-hooks.ts';
import { ONE_SESSION_UPLOAD, POOLED_UPLOAD } from './sync/hooks.ts';
import type { Notifications } from './sync/notifications.ts';

declare module 'fastify' {
  interface FastifyInstance {
    syncHub?: SyncHub;
  }
}

export { API_PREFIX };

/**
 * How long a device has to answer the server's going-away close before its socket is cut: an
 * answer takes one round trip, and the whole stop has SHUTDOWN_GRACE_MS (10 s by default).
 */
const CLOSE_HANDSHAKE_MS = 2000;

export interface AppOptions {
  readonly config: Config;
  readonly services: Services;
  readonly probe: HealthProbe;
  /** The sync channel's wiring; without it (CLI-only apps) there is no /sync route. */
  readonly sync?: {
    readonly notifications: Notifications;
    readonly clock: Clock;
    /** The database is one session (PGlite): the feed prepares its statements in SQL. */
    readonly oneSession?: boolean;
    /** Where the feed's diff runs, planned once (Database.planned). */
    readonly planned: Db;
  };
  /** Request, sync, job and pool figures (/metrics); absent when no one scrapes them. */
  readonly metrics?: Metrics;
}

/**
 * Request logs carry the route pattern (`/visit-details/:scheduleUuid`), never the URL itself:
 * path parameters can be secrets (`/organizations/claim/:token`) or whatever a client put there,
 * and the query string can be a name search; nor headers (bearer tokens). A URL that matches no
 * route is logged as `(no route)` for the same reason. Lines go to stdout through an
 * asynchronous destination: a request never waits on a write(2) of its log lines; pino flushes
 * what is buffered when the process exits.
 */
export function loggerOptions(level: string): FastifyServerOptions['logger'] {
  return {
    level,
    ...(level === 'silent' ? {} : { stream: pino.destination({ dest: 1, sync: false }) }),
    serializers: {
      req: (req: { method: string; id: string; routeOptions?: { url?: string | undefined } }) => ({ id: req.id, method: req.method, path: req.routeOptions?.url ?? '(no route)' }),
      res: (res: { statusCode: number }) => ({ statusCode: res.statusCode }),
    },
  };
}

/**
 * The zod provider emits every registered schema twice (`X` for responses, `XInput` for
 * requests); only the variants some operation uses stay, so generated clients see one type
 * per schema.
 */
function withoutUnusedSchemas<T>(document: T): T {
  const doc = document as { paths?: unknown; components?: { schemas?: Record<string, unknown> } };
  const schemas = doc.components?.schemas ?? {};
  const refsIn = (value: unknown): string[] =>
    [...JSON.stringify(value).matchAll(/"#\/components\/schemas\/([^"]+)"/g)].map((m) => decodeURIComponent(m[1] ?? ''));
  const used = new Set<string>();
  const pending = refsIn(doc.paths ?? {});
  for (let name = pending.pop(); name !== undefined; name = pending.pop()) {
    if (used.has(name)) continue;
    used.add(name);
    pending.push(...refsIn(schemas[name] ?? {}));
  }
  const kept = Object.fromEntries(Object.entries(schemas).filter(([name]) => used.has(name)));
  return { ...doc, components: { ...doc.components, schemas: kept } } as T;
}

/**
 * The statuses every route of a kind can answer whatever its handler does, added to its
 * documented responses (the OpenAPI document lists every status the server returns): any
 * POST/PUT can meet malformed JSON (400), an oversized body (413), an unsupported Content-Type
 * (415), a bad or reused Idempotency-Key (422) or a retry racing the first (409); a path
 * parameter that names nothing is a 404; a query string that fails its schema a 422; any
 * route answers 429 over the caller's request rate limit.
 */
function documentFrameworkStatuses(route: RouteOptions): void {
  const schema = route.schema as { hide?: boolean; querystring?: unknown; response?: Record<string | number, unknown> } | undefined;
  if (!schema || schema.hide || !route.url.startsWith(API_PREFIX)) return;
  const methods = [route.method].flat();
  const response: Record<string | number, unknown> = { ...schema.response };
  const add = (...codes: number[]) => {
    for (const code of codes) response[code] ??= errorBody;
  };
  // Node's HTTP parser answers these for any URL: a header block (or URL) over 16 KiB, a
  // request slower than REQUEST_TIMEOUT_MS. Any route answers 429 over the caller's rate limit,
  // and 503 while the database is unreachable (http/database-gate.ts).
  add(408, 429, 431, 503);
  if (methods.includes('POST') || methods.includes('PUT')) add(400, 409, 413, 415, 422);
  if (route.url.includes('/:')) add(404);
  if (schema.querystring) add(422);
  route.schema = { ...schema, response };
}

export async function buildApp(opts: AppOptions): Promise<FastifyInstance> {
  const { config, services } = opts;
  const { timeouts } = config;
  // Node enforces requestTimeout/headersTimeout on a timer; check often enough that a slow
  // client is cut close to the configured time rather than up to 30 s later.
  const slowClients = {
    headersTimeout: timeouts.headersMs,
    requestTimeout: timeouts.requestMs,
    connectionsCheckingInterval: Math.min(1000, Math.max(50, Math.floor(timeouts.headersMs / 4))),
  };
  const app = Fastify({
    logger: loggerOptions(config.logLevel),
    trustProxy: config.trustProxy,
    bodyLimit: config.limits.bodyLimitBytes,
    return503OnClosing: true,
    // Unique across restarts and nodes: the audit log ties each PHI access to its request by this id.
    genReqId: () => randomUUID(),
    forceCloseConnections: 'idle',
    requestTimeout: timeouts.requestMs,
    connectionTimeout: timeouts.connectionIdleMs,
    // Ids longer than a uuid still reach the route, whose service answers its usual 404.
    routerOptions: { maxParamLength: MAX_PATH_PARAM },
    frameworkErrors: (err, _request, reply) => sendFrameworkError(err, reply as unknown as FastifyReply),
    clientErrorHandler: writeClientError,
    ...(config.tls
      ? {
          https: {
            cert: fs.readFileSync(config.tls.certFile),
            key: fs.readFileSync(config.tls.keyFile),
            minVersion: 'TLSv1.2' as const,
            ...slowClients,
          },
        }
      : { http: slowClients }),
  }).withTypeProvider<ZodTypeProvider>();

  app.setValidatorCompiler(validatorCompiler);
  // Tests also run every response through its zod schema and compare (http/response-serializer.ts).
  app.setSerializerCompiler(responseSerializerCompiler({ check: config.responseCheck }));
  installErrorHandling(app);
  app.addHook('onRoute', documentFrameworkStatuses);
  await app.register(securityHeaders, { corsOrigins: config.corsOrigins, hsts: config.hsts });
  if (opts.metrics) await app.register(metricsPlugin, { metrics: opts.metrics, token: config.metrics.token });

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Fieldchart clinician API',
        version: '1.0.0',
        description: 'The REST API of the Fieldchart mobile app. Success bodies are `{"status": true, "data": …}`; errors are `{"status": false, "message", "code", "errors"?}`.',
      },
      servers: [{ url: '/' }],
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } } },
    },
    transform: (input) => {
      const out = jsonSchemaTransform(input);
      const isPublic = (input.route.config as { public?: boolean } | undefined)?.public;
      const method = String(Array.isArray(input.route.method) ? input.route.method[0] : input.route.method).toLowerCase();
      const schema: Record<string, unknown> = {
        ...out.schema,
        // Stable names for generated clients: method + path, e.g. post_sign_in_social.
        operationId: `${method}_${input.url.replace(API_PREFIX, '').replace(/[^A-Za-z0-9]+/g, '_').replace(/^_|_$/g, '')}`,
      };
      if (!isPublic) schema.security = [{ bearer: [] }];
      if (method === 'post' || method === 'put') {
        const headers = (out.schema.headers ?? { type: 'object', properties: {} }) as { properties?: Record<string, unknown> };
        schema.headers = {
          ...headers,
          properties: {
            ...headers.properties,
            'idempotency-key': {
              type: 'string',
              maxLength: 255,
              description: 'Retry safely: a repeat with the same key and body answers the first response and changes nothing (24 h)',
            },
          },
        };
      }
      return { ...out, schema };
    },
    transformObject: (input) => withoutUnusedSchemas(jsonSchemaTransformObject(input)),
  });
  const syncLog = app.log.child({ component: 'sync' });
  const syncMetrics = opts.metrics?.sync;
  const hooks = opts.sync
    ? syncHooksOf({
        services,
        clock: opts.sync.clock,
        log: syncLog,
        oneSession: opts.sync.oneSession ?? false,
        planned: opts.sync.planned,
        ...(syncMetrics ? { metrics: syncMetrics } : {}),
      })
    : null;
  const hub =
    opts.sync && hooks
      ? createSyncHub({
          hooks,
          notifications: opts.sync.notifications,
          clock: opts.sync.clock,
          log: syncLog,
          upload: opts.sync.oneSession ? ONE_SESSION_UPLOAD : POOLED_UPLOAD,
          ...(syncMetrics ? { metrics: syncMetrics } : {}),
        })
      : null;
  if (hub) {
    app.decorate('syncHub', hub);
    await app.register(websocket, {
      options: { maxPayload: MAX_FRAME_BYTES },
      // Devices are told the server is going away (1001), so they reconnect to another node.
      preClose(this: FastifyInstance, done: () => void) {
        // Upgrades stop first. A device told to go away reconnects at once, and an upgrade
        // that arrives while the hub closes is answered 503 by the closing router on a socket
        // that HTTP no longer owns: nothing ever closes it, and `server.close()` would wait for
        // it until the grace period ends the process. Without a listener, Node answers it as
        // plain HTTP (the same 503), which closes its connection.
        this.server.removeAllListeners('upgrade');
        void hub.close().finally(() => {
          const clients = [...this.websocketServer.clients];
          for (const client of clients) client.close(CLOSE_CODES.going_away);
          this.websocketServer.close();
          // A device whose network is gone never answers the close, and `server.close()` would
          // wait for ws's own 30 s close timeout, past the grace period: it is cut off sooner.
          const cutOff = setTimeout(() => {
            for (const client of clients) if (client.readyState !== client.CLOSED) client.terminate();
          }, CLOSE_HANDSHAKE_MS);
          cutOff.unref();
          done();
        });
      },
    });
  }

  await app.register(swaggerUi, { routePrefix: '/docs', uiConfig: { docExpansion: 'list' }, staticCSP: true });

  await app.register(healthRoutes, { probe: opts.probe, workerExpected: config.worker.enabled });

  const fieldAppDir = config.fieldAppDir ?? defaultFieldAppDir();
  if (fieldAppDir) await app.register(fieldApp, { dir: fieldAppDir });
  else app.log.warn('the field app is not built (npm run build:app): /app answers 404');

  await app.register(
    async (api) => {
      // First: while PostgreSQL is away nothing below (sessions, rate limits) can answer.
      if (config.database.kind === 'postgres') {
        const { url } = config.database;
        await api.register(databaseGate, { probe: () => probePostgres(url, PROBE_TIMEOUT_MS) });
      }
      // Requests authentication refuses count against their address (http/rate-limit.ts).
      await api.register(authentication, { sessions: services.sessions, beforeRefusing: addressLimitCheck(api) });
      await api.register(requestRateLimit, {
        rate: services.requestRate,
        limits: { perUser: config.limits.requestsPerUserPerMinute, perAddress: config.limits.requestsPerAddressPerMinute },
      });
      await api.register(idempotency, { idempotency: services.idempotency, unitOfWork: services.unitOfWork });
      await api.register(authRoutes, { services });
      await api.register(accountRoutes, { services });
      await api.register(organizationRoutes, { services });
      await api.register(invitationRoutes, { services });
      await api.register(claimRoutes, { services });
      await api.register(patientRoutes, { services });
      await api.register(reportRoutes, { services });
      await api.register(visitRoutes, { services });
      await api.register(schedulingRoutes, { services });
      await api.register(subscriptionRoutes, { services });
      await api.register(messageRoutes, { services });
      await api.register(notificationRoutes, { services });
      await api.register(audioRoutes, { services, apiPrefix: API_PREFIX });
      await api.register(aiChecklistRoutes, { services });
      await api.register(aiPipelineRoutes, { services });
      if (hub && hooks) await api.register(syncRoutes, { hub, hooks });
      api.get('/openapi.json', { config: { public: true }, schema: { hide: true } }, async () => app.swagger());
    },
    { prefix: API_PREFIX },
  );

  return app;
}
