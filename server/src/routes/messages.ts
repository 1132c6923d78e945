import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { chatMessage, conversation, conversationIdParams, envelope, messageListQuery, messageOnly, paginated, sendMessageBody } from '@fieldchart/schema/api';
import { auditContextOf } from '../http/audit-context.ts';
import { done, errors, ok } from '../http/reply.ts';
import type { Services } from '../services/index.ts';

const tags = ['Messages'];

export const messageRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (app, { services }) => {
  app.get('/messages/conversations', {
    schema: {
      tags,
      summary: 'The caller’s patient conversations, latest activity first',
      description: 'Each carries the integer `id`, the patient’s name and email, the unread count (patient replies not yet marked read) and the last message.',
      response: { 200: envelope(z.array(conversation)), ...errors(401) },
    },
    handler: async (req) => ok(await services.messages.conversations(await auditContextOf(req))),
  });

  app.get('/messages/:conversationId', {
    schema: {
      tags,
      summary: 'One conversation’s messages, newest first',
      description: 'Paginated (page, per_page ≤ 100, default 50). An unknown, malformed or another clinician’s conversation id is 404.',
      params: conversationIdParams,
      querystring: messageListQuery,
      response: { 200: paginated(chatMessage), ...errors(401, 404, 422) },
    },
    handler: async (req) => {
      const page = await services.messages.messages(await auditContextOf(req), req.params.conversationId, req.query);
      return { status: true as const, data: page.data, meta: page.meta };
    },
  });

  app.post('/messages/send', {
    config: { idempotentWrite: 'lazy' },
    schema: {
      tags,
      summary: 'Email a message to a patient',
      description:
        'Without conversation_id a new conversation opens; with it (one of the caller’s conversations, else 404) the message joins it and is mailed to that conversation’s patient address. The mail’s Reply-To is the conversation’s reply address, so the patient’s answer comes back into the conversation.',
      body: sendMessageBody,
      response: { 200: messageOnly, ...errors(401, 404, 422) },
    },
    handler: async (req) => {
      await services.messages.send(await auditContextOf(req), req.body);
      return done('Message sent');
    },
  });

  app.put('/messages/:conversationId/read', {
    schema: {
      tags,
      summary: 'Mark a conversation’s messages read',
      params: conversationIdParams,
      response: { 200: messageOnly, ...errors(401, 404) },
    },
    handler: async (req) => {
      await services.messages.markRead(await auditContextOf(req), req.params.conversationId);
      return done('Conversation marked read');
    },
  });
};
