/**
 * The sync channel's node-local hub: the sockets this node holds, by user, and the
 * PostgreSQL notifications that reach them from any node (docs/sync-protocol.md, Several
 * nodes). Nodes share nothing else: every change is read from the database.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { envelope } from '@fieldchart/schema/api';
import { MAX_MUTATION_BYTES, restMutationsBody, restMutationsResult } from '@fieldchart/schema/sync';
import { Unauthorized, Unavailable } from '../errors.ts';
import { principalOf } from '../http/authentication.ts';
import { errors, ok } from '../http/reply.ts';
import { applyMutationBatch, type BatchOutcome, type MutationDevice } from './apply-mutations.ts';
import { sql } from 'drizzle-orm';
import type { Clock } from '../clock.ts';
import { safeError } from '../log-safety.ts';
import { organizations, users } from '@fieldchart/schema/db';
import { effectiveConfig, organizationSettingsOf } from '../services/organizations/effective-config.ts';
import { seatOf } from '../services/organizations/seats.ts';
import { eq } from 'drizzle-orm';
import type { Services } from '../services/index.ts';
import { SyncConnection } from './connection.ts';
import { createDrafts, type Drafts } from './drafts.ts';
import { createFeed } from './feed.ts';
import { createMutationRunner, type MutationRunner } from './mutations.ts';
import { CHANNELS, type Notifications } from './notifications.ts';

/** Sockets one user may hold on a node (docs: Limits). */
const MAX_SOCKETS_PER_USER = 10;
/** The largest frame a device may send: a signature image fits. */
export const MAX_FRAME_BYTES = 4 * 1024 * 1024;

export interface SyncHubContext {
  readonly services: Services;
  readonly clock: Clock;
  readonly log: FastifyBaseLogger;
  readonly drafts: Drafts;
  readonly feed: ReturnType<typeof createFeed>;
  readonly runMutation: MutationRunner;
  readonly maxSocketsPerUser: number;
  connectionsOf(userId: string): SyncConnection[];
  attach(connection: SyncConnection): void;
  detach(connection: SyncConnection): void;
}

export interface SyncHub {
  /** The websocket route, registered under the API prefix. */
  readonly routes: FastifyPluginAsyncZod;
  /** Subscribes to the notification channels; call once the database is migrated. */
  start(): Promise<void>;
  /** Closes every socket with 1001 (the device reconnects elsewhere) and stops listening. */
  close(): Promise<void>;
  /** Sockets open on this node (health and tests). */
  size(): number;
}

export function createSyncHub(deps: { services: Services; notifications: Notifications; clock: Clock; log: FastifyBaseLogger }): SyncHub {
  const { services, clock } = deps;
  const log = deps.log.child({ component: 'sync' });
  const nodeId = randomUUID();
  const byUser = new Map<string, Set<SyncConnection>>();
  const unlisteners: Array<() => Promise<void>> = [];
  const drafts = createDrafts({ db: services.unitOfWork.db, phi: services.phi, nodeId, log });
  const feed = feedOf(services);
  const runMutation = createMutationRunner({ services, sectionsOf: (tx, visitId, ownerId) => drafts.sectionsOf(tx, visitId, ownerId) });

  const all = (): SyncConnection[] => [...byUser.values()].flatMap((set) => [...set]);
  const ctx: SyncHubContext = {
    services,
    clock,
    log,
    drafts,
    feed,
    runMutation,
    maxSocketsPerUser: MAX_SOCKETS_PER_USER,
    connectionsOf: (userId) => [...(byUser.get(userId) ?? [])],
    attach(connection) {
      for (const other of byUser.get(connection.userId) ?? []) {
        if (other.clientId === connection.clientId) other.close('superseded', 'Connected again from the same device');
      }
      let set = byUser.get(connection.userId);
      if (!set) byUser.set(connection.userId, (set = new Set()));
      set.add(connection);
      // Other nodes close their socket of this device too.
      void services.unitOfWork.db
        .execute(sql`select pg_notify(${CHANNELS.client}, ${`${connection.userId}:${connection.clientId}:${connection.id}`})`)
        .catch((err: unknown) => log.warn({ err: safeError(err) }, 'could not announce sync client'));
    },
    detach(connection) {
      drafts.detach(connection);
      const set = byUser.get(connection.userId);
      if (!set) return;
      set.delete(connection);
      if (set.size === 0) byUser.delete(connection.userId);
    },
  };

  const forUser = (userId: string, fn: (c: SyncConnection) => void | Promise<void>) => {
    for (const c of byUser.get(userId) ?? []) {
      void Promise.resolve(fn(c)).catch((err: unknown) => log.error({ err: safeError(err) }, 'sync notification handling failed'));
    }
  };
  const everyone = () => {
    for (const c of all()) {
      c.requestFeed();
      void c.recheck().catch((err: unknown) => log.error({ err: safeError(err) }, 'sync recheck failed'));
    }
  };

  const routes: FastifyPluginAsyncZod = async (app) => {
    // A `__proto__` or `constructor.prototype` key inside one mutation's arguments must not
    // refuse the whole request (the device would resend it for ever): in this plugin only,
    // such keys are dropped as JSON is parsed, and each mutation is judged without them.
    app.removeContentTypeParser('application/json');
    app.addContentTypeParser('application/json', { parseAs: 'string' }, app.getDefaultJsonParser('remove', 'remove'));
    app.get('/sync', { websocket: true, config: { public: true }, schema: { hide: true } }, (socket) => {
      new SyncConnection(socket, ctx);
    });

    app.post('/sync/mutations', {
      // One mutation may carry a signature image: the largest one fits with room to spare
      // (the device cuts its batches by size; each mutation is judged on its own).
      bodyLimit: MAX_MUTATION_BYTES + 1024 * 1024,
      schema: {
        tags: ['Sync'],
        summary: 'Apply queued mutations over HTTP (the sync channel’s fallback)',
        description:
          'For a device whose network passes HTTP but not websockets: the same mutations as the sync socket (docs/sync-protocol.md), in order, exactly once per client_id and mutation_id, each answered ack, reject (in the API’s error terms), retry, or failed (parked after repeated unexpected server errors). One mutation’s fault (an unknown name, invalid or oversized arguments) is its own reject, never the request’s. At most 100 per request.',
        body: restMutationsBody,
        response: { 200: envelope(restMutationsResult), ...errors(401, 422, 503) },
      },
      handler: async (req) => {
        const principal = principalOf(req);
        const device: MutationDevice = {
          userId: principal.userId,
          sessionId: principal.sessionId,
          clientId: req.body.client_id,
          organizationId: (await services.seatOf(principal.userId))?.organizationId ?? null,
          requestIdPrefix: String(req.id),
        };
        const batch = req.body.mutations.map((m) => ({ type: 'mutation' as const, ...m }));
        let outcome: BatchOutcome;
        try {
          outcome = await applyMutationBatch(services, runMutation, device, batch, log);
        } catch (err) {
          // Usually the database: answering needs it too (last_mutation_id), so the whole
          // request is retried, as the error shape says.
          log.warn({ err: safeError(err) }, 'sync mutations over HTTP not applied');
          throw new Unavailable('The mutations could not be applied now; retry', 'sync_unavailable');
        }
        if (outcome.kind === 'session') throw new Unauthorized('Invalid or expired token', 'invalid_token');
        return ok({ last_mutation_id: outcome.lastMutationId, results: outcome.replies });
      },
    });
  };

  return {
    routes,
    async start() {
      unlisteners.push(
        await deps.notifications.listen(CHANNELS.data, (userId) => forUser(userId, (c) => c.requestFeed()), everyone),
        await deps.notifications.listen(CHANNELS.session, (userId) => forUser(userId, (c) => c.recheck()), everyone),
        await deps.notifications.listen(CHANNELS.client, (payload) => {
          const [userId = '', clientId = '', connectionId = ''] = payload.split(':');
          forUser(userId, (c) => {
            if (c.clientId === clientId && c.id !== connectionId) c.close('superseded', 'Connected again from the same device');
          });
        }),
        await deps.notifications.listen(CHANNELS.draft, (payload) => {
          void drafts.onNotification(payload).catch((err: unknown) => log.error({ err: safeError(err) }, 'draft notification failed'));
        }),
      );
    },
    async close() {
      for (const c of all()) c.close('going_away', 'Server shutting down');
      for (const unlisten of unlisteners.splice(0)) await unlisten().catch(() => {});
    },
    size: () => all().length,
  };
}

/** The change feed wired to the services: scope = time zone, seat and effective configuration. */
export function feedOf(services: Services) {
  return createFeed({
    unitOfWork: services.unitOfWork,
    phi: services.phi,
    // Every poke runs this: one read each of settings, seat, the user's overrides and the
    // organization, and the same pure resolution GET /my-organization/config uses.
    async scopeOf(tx, userId) {
      const [{ time_zone: timeZone }, seat, [user]] = await Promise.all([
        services.clinicianSettings.get(userId, tx),
        seatOf(tx, userId),
        tx.select({ featureOverrides: users.featureOverrides }).from(users).where(eq(users.id, userId)),
      ]);
      const [org] = seat ? await tx.select().from(organizations).where(eq(organizations.id, seat.organizationId)) : [];
      const config = effectiveConfig({ organization: org ? organizationSettingsOf(org) : null, personalOverrides: user?.featureOverrides ?? {} });
      return {
        timeZone,
        organizationId: seat?.organizationId ?? null,
        config: { ...config, organization: org ? { uuid: org.id, name: org.name } : null },
      };
    },
  });
}
