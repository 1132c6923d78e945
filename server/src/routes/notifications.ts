import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { messageOnly, notification, notificationListQuery, notificationUuidParams, paginated } from '@fieldchart/schema/api';
import { principalOf } from '../http/authentication.ts';
import { done, errors } from '../http/reply.ts';
import type { Services } from '../services/index.ts';

const tags = ['Settings'];

export const notificationRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (app, { services }) => {
  app.get('/notifications', {
    schema: {
      tags,
      summary: 'The notification history, newest first',
      description: 'per_page (≤ 100, default 20), page, is_read (0 = unread, 1 = read; omitted: all). Titles and bodies carry no PHI; `data` holds the ids to open (e.g. schedule_uuid, conversation_id).',
      querystring: notificationListQuery,
      response: { 200: paginated(notification), ...errors(401, 422) },
    },
    handler: async (req) => {
      const page = await services.notifications.list(principalOf(req).userId, req.query);
      return { status: true as const, data: page.data, meta: page.meta };
    },
  });

  app.put('/notifications/read-all', {
    schema: {
      tags,
      summary: 'Mark every notification read',
      response: { 200: messageOnly, ...errors(401) },
    },
    handler: async (req) => {
      const n = await services.notifications.markAllRead(principalOf(req).userId);
      return done(`${n} notification${n === 1 ? '' : 's'} marked read`);
    },
  });

  app.put('/notifications/:uuid/read', {
    schema: {
      tags,
      summary: 'Mark one notification read',
      description: 'An unknown, malformed or another user’s notification uuid is 404.',
      params: notificationUuidParams,
      response: { 200: messageOnly, ...errors(401, 404) },
    },
    handler: async (req) => {
      await services.notifications.markRead(principalOf(req).userId, req.params.uuid);
      return done('Notification marked read');
    },
  });
};
