import { z } from 'zod';
import { op } from './operation.ts';

const user = z.string().trim().min(1, 'is required').describe('user uuid or email');

/** Operator commands for devices (`fieldchart device …`): the sync clients of a user. */
export const deviceOperations = {
  'device.list': op(z.object({ user }), (ctx, a) => ctx.services.devices.list(a.user)),
  'device.revoke': op(z.object({ client_id: z.uuid('must be a client id (uuid)'), user: user.optional() }), (ctx, a) =>
    ctx.services.devices.revoke(a.client_id, a.user),
  ),
} as const;
