/**
 * The sync channel over HTTP (docs/sync-protocol.md): the websocket upgrade, handed to the
 * hub, and `POST /sync/mutations`, the fallback for networks that pass HTTP but not
 * websockets — the same hook, on the same exactly-once counter, as mutations on the socket.
 */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { envelope } from '@fieldchart/schema/api';
import { MAX_MUTATION_BYTES, restMutationsBody, restMutationsResult } from '@fieldchart/schema/sync';
import { Forbidden, Unauthorized, Unavailable } from '../errors.ts';
import { principalOf } from '../http/authentication.ts';
import { errors, ok } from '../http/reply.ts';
import { safeError } from '../log-safety.ts';
import type { BatchOutcome } from '../services/sync/mutation-ledger.ts';
import { DROPPED_JSON_KEYS, type SyncHooks } from '../sync/hooks.ts';
import type { SyncHub } from '../sync/hub.ts';

export const syncRoutes: FastifyPluginAsyncZod<{ hub: SyncHub; hooks: SyncHooks }> = async (app, { hub, hooks }) => {
  // A `__proto__` or `constructor.prototype` key inside one mutation's arguments must not
  // refuse the whole request (the device would resend it for ever): in this plugin only,
  // such keys are dropped as JSON is parsed, and each mutation is judged without them.
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, app.getDefaultJsonParser(DROPPED_JSON_KEYS.protoAction, DROPPED_JSON_KEYS.constructorAction));

  app.get('/sync', { websocket: true, config: { public: true }, schema: { hide: true } }, (socket, request) => {
    hub.handleConnection(socket, request.raw);
  });

  app.post('/sync/mutations', {
    // One mutation may carry a signature image: the largest one fits with room to spare
    // (the device cuts its batches by size; each mutation is judged on its own).
    bodyLimit: MAX_MUTATION_BYTES + 1024 * 1024,
    schema: {
      tags: ['Sync'],
      summary: 'Apply queued mutations over HTTP (the sync channel’s fallback)',
      description:
        'For a device whose network passes HTTP but not websockets: the same mutations as the sync socket (docs/sync-protocol.md), in order, exactly once per client_id and mutation_id, each answered ack, reject (in the API’s error terms), retry, failed (parked after repeated unexpected server errors), or — with protocol 2 — conflict (the id was used by another install with the same client_id). One mutation’s fault (an unknown name, invalid or oversized arguments) is its own reject, never the request’s. At most 100 per request.',
      body: restMutationsBody,
      response: { 200: envelope(restMutationsResult), ...errors(401, 403, 422, 503) },
    },
    handler: async (req) => {
      const principal = principalOf(req);
      const { refusal, organizationId } = await hooks.scope(principal.userId, principal.sessionId, req.body.client_id);
      if (refusal === 'device_revoked') throw deviceRevoked();
      const device = {
        userId: principal.userId,
        sessionId: principal.sessionId,
        clientId: req.body.client_id,
        organizationId,
        requestIdPrefix: String(req.id),
        protocol: req.body.protocol ?? 1,
        linkSession: true,
        answeredOverHttp: true,
      };
      const batch = req.body.mutations.map((m) => ({ type: 'mutation' as const, ...m }));
      let outcome: BatchOutcome;
      try {
        outcome = await hooks.applyMutations(device, batch);
      } catch (err) {
        // Usually the database: answering needs it too (last_mutation_id), so the whole
        // request is retried, as the error shape says.
        req.log.warn({ err: safeError(err) }, 'sync mutations over HTTP not applied');
        throw new Unavailable('The mutations could not be applied now; retry', 'sync_unavailable');
      }
      if (outcome.kind === 'session' && outcome.state === 'device_revoked') throw deviceRevoked();
      if (outcome.kind === 'session') throw new Unauthorized('Invalid or expired token', 'invalid_token');
      if (outcome.kind === 'device_revoked') throw deviceRevoked();
      return ok({ last_mutation_id: outcome.lastMutationId, results: outcome.replies });
    },
  });
};

/** A revoked device (`fieldchart device revoke`): the same refusal as the socket's 4411. */
const deviceRevoked = () => new Forbidden('This device was revoked', 'device_revoked');
