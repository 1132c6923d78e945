import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { aiStatus, envelope, messageOnly, processAudioFields, processAudioResult, transcriptionUuidParams } from '@fieldchart/schema/api';
import { Invalid } from '../errors.ts';
import { auditContextOf } from '../http/audit-context.ts';
import { principalOf } from '../http/authentication.ts';
import { readAudioMultipart, registerMultipart } from '../http/multipart.ts';
import { done, errors, ok } from '../http/reply.ts';
import type { Services } from '../services/index.ts';

const tags = ['AI documentation'];

export const aiPipelineRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (app, { services }) => {
  const { config } = services;

  await app.register(async (scope) => {
    await registerMultipart(scope);
    scope.post('/ai/process-audio', {
      config: { idempotentWrite: 'lazy' },
      schema: {
        tags,
        summary: 'Transcribe a visit dictation and draft its SOAP note (asynchronous)',
        description: `multipart/form-data: a file part \`audio\` (m4a, wav or mp3, decided from the bytes; at most ${config.audio.aiAudioMaxBytes} bytes, 413 over it) OR a text part \`upload_id\` naming a finished resumable (tus) upload; text parts \`schedule_uuid\` (one of the caller's visits: another clinician's is 404 and nothing is stored), \`discipline\` (PT, PTA, OT, COTA, SLP, RN) and \`encounter_type\` (daily_note, evaluation, reassessment, progress_note, discharge, supervisory); a missing or invalid field is 422 naming it. The recording, the run (status \`processing\`) and its job are recorded in one transaction; poll GET /ai/status/{transcription_uuid} or watch the \`ai_status\` rows of the sync feed.`,
        consumes: ['multipart/form-data'],
        response: { 200: envelope(processAudioResult), ...errors(401, 404, 413, 422) },
      },
      handler: async (req) => {
        const ctx = await auditContextOf(req);
        const userId = principalOf(req).userId;
        const { fields, audio } = await readAudioMultipart(req, {
          fields: processAudioFields,
          maxBytes: config.audio.aiAudioMaxBytes,
          userId,
          audio: services.audio,
          check: (f) => services.aiPipeline.assertVisit(userId, f.schedule_uuid),
          fileOptional: true,
        });
        if (audio && fields.upload_id) {
          await audio.discard();
          throw Invalid.field('upload_id', 'send either an `audio` file part or an upload_id, not both', 'audio_twice');
        }
        const input = { visitId: fields.schedule_uuid, discipline: fields.discipline, encounterType: fields.encounter_type };
        if (audio) {
          try {
            return ok(await services.aiPipeline.begin(ctx, userId, input, (tx) => services.audio.commit(ctx, audio, { visitId: fields.schedule_uuid, purpose: 'ai' }, tx)));
          } catch (err) {
            await audio.discard();
            throw err;
          }
        }
        const uploadId = fields.upload_id;
        if (!uploadId) throw Invalid.field('audio', 'is required: an m4a, wav or mp3 file part named `audio`, or an upload_id', 'audio_required');
        return ok(
          await services.aiPipeline.begin(ctx, userId, input, (tx) =>
            services.audio.fromUpload(ctx, { userId, uploadId, visitId: fields.schedule_uuid, purpose: 'ai' }, tx),
          ),
        );
      },
    });
  });

  app.get('/ai/status/:serverUuid', {
    schema: {
      tags,
      summary: 'Status of an AI documentation run',
      description:
        'status is processing, completed or failed. Once completed: raw_transcript, generated_soap, source_map (each generated sentence with its transcript character span and, where the engine timed it, audio time; unsupported sentences flagged), confidence_summary, verification_flags, not_mentioned, vital_signs. Once failed: error_message (what the clinician can do). 404 for an unknown run or another clinician’s.',
      params: transcriptionUuidParams,
      response: { 200: envelope(aiStatus), ...errors(401, 404) },
    },
    handler: async (req) => ok(await services.aiPipeline.status(await auditContextOf(req), principalOf(req).userId, req.params.serverUuid)),
  });

  app.post('/ai/retry/:serverUuid', {
    schema: {
      tags,
      summary: 'Run a failed AI documentation run again',
      description: 'Only from failed (409 otherwise): the run goes back to processing and its job is enqueued again, in one transaction.',
      params: transcriptionUuidParams,
      response: { 200: messageOnly, ...errors(401, 404, 409) },
    },
    handler: async (req) => {
      await services.aiPipeline.retry(await auditContextOf(req), principalOf(req).userId, req.params.serverUuid);
      return done('Processing again');
    },
  });
};
