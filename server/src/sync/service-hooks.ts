/**
 * The sync hub's hooks (hooks.ts) built from the services: authentication as the REST API
 * does it, the feed, the mutation ledger and runner, the drafts store. The one place where the
 * socket side meets the database side.
 */
import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import type { Clock } from '../clock.ts';
import type { Db } from '../db/database.ts';
import type { Services } from '../services/index.ts';
import { createFeed } from '../services/sync/feed.ts';
import { applyMutationBatch, lastMutationIdOf, type MutationDevice, type MutationMessage } from '../services/sync/mutation-ledger.ts';
import { createMutationRunner } from '../services/sync/mutation-runner.ts';
import type { FastifyBaseLogger } from 'fastify';
import { meterBatches, meterFeed, type SyncMetrics } from '../metrics/sync-metrics.ts';
import { refusalOfSession } from './close-reasons.ts';
import { createDrafts } from './drafts.ts';
import type { SyncHooks } from './hooks.ts';
import { CHANNELS } from './notifications.ts';

/** The change feed wired to the services' database and key ring. */
export function feedOf(services: Services, options: { oneSession?: boolean; planned?: Db } = {}) {
  return createFeed({ db: services.unitOfWork.db, phi: services.phi, oneSession: options.oneSession ?? false, ...(options.planned ? { planned: options.planned } : {}) });
}

export function syncHooksOf(deps: {
  services: Services;
  clock: Clock;
  log: FastifyBaseLogger;
  nodeId?: string;
  oneSession?: boolean;
  /** Where the feed's diff runs, planned once (Database.planned). */
  planned: Db;
  /** /metrics: mutations by outcome, feed reads timed. */
  metrics?: SyncMetrics;
}): SyncHooks {
  const { services, clock, log } = deps;
  const db = services.unitOfWork.db;
  const drafts = createDrafts({ db, phi: services.phi, nodeId: deps.nodeId ?? randomUUID(), log });
  const feed = feedOf(services, { oneSession: deps.oneSession ?? false, planned: deps.planned });
  const runMutation = createMutationRunner({ services, sectionsOf: (tx, visitId, ownerId) => drafts.sectionsOf(tx, visitId, ownerId) });
  const applyBatch = meterBatches(
    (device: MutationDevice, batch: readonly MutationMessage[]) => applyMutationBatch(services, runMutation, device, batch, log),
    deps.metrics,
  );
  const readFeed = meterFeed('full', feed.stream.bind(feed), deps.metrics);
  const readFeedTable = meterFeed('tables', feed.streamTable.bind(feed), deps.metrics);

  return {
    drafts,

    async authenticate(token, clientId) {
      const claims = await services.accessTokens.verify(token, clock.now());
      if (!claims) return { ok: false, refusal: 'invalid_token' };
      const refusal = refusalOfSession(await services.sessions.state(claims.userId, claims.sessionId));
      if (refusal) return { ok: false, refusal };
      const [lastMutationId, seat, settings] = await Promise.all([
        lastMutationIdOf(services, claims.userId, clientId),
        services.seatOf(claims.userId),
        services.clinicianSettings.get(claims.userId),
      ]);
      return {
        ok: true,
        identity: {
          userId: claims.userId,
          sessionId: claims.sessionId,
          expiresAt: claims.expiresAt,
          organizationId: seat?.organizationId ?? null,
          timeZone: settings.time_zone,
          lastMutationId,
        },
      };
    },

    async admit(identity, clientId, holdsData) {
      const standing = await services.devices.admit(identity.userId, clientId, identity.sessionId, holdsData, identity.organizationId);
      return standing === 'ok' ? null : standing;
    },

    async scope(userId, sessionId, clientId) {
      const refusal = refusalOfSession(await services.sessions.state(userId, sessionId));
      if (refusal) return { refusal, organizationId: null };
      if (clientId !== undefined && (await services.devices.isRevoked(userId, clientId))) return { refusal: 'device_revoked', organizationId: null };
      return { refusal: null, organizationId: (await services.seatOf(userId))?.organizationId ?? null };
    },

    feed: (userId, cursor, now, options, sink) => readFeed(userId, cursor, now, options, sink),
    feedTable: (userId, tables, cursor, since, now, options, sink) => readFeedTable(userId, tables, cursor, since, now, options, sink),

    applyMutations: applyBatch,

    async announce(userId, clientId, connectionId) {
      await db.execute(sql`select pg_notify(${CHANNELS.client}, ${`${userId}:${clientId}:${connectionId}`})`);
    },
  };
}
