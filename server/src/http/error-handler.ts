import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors, isResponseSerializationError } from 'fastify-type-provider-zod';
import type { ErrorBody } from '@fieldchart/schema/api';
import { AppError, Invalid, type FieldErrors } from '../errors.ts';
import { safeError } from '../log-safety.ts';

/** Fastify's own 4xx errors, by code, in the contract's terms. */
const FRAMEWORK_ERRORS: Record<string, { status: number; code: string; message: string }> = {
  FST_ERR_CTP_INVALID_JSON_BODY: { status: 400, code: 'malformed_json', message: 'The request body is not valid JSON' },
  FST_ERR_CTP_EMPTY_JSON_BODY: { status: 400, code: 'malformed_json', message: 'The request body is empty but declared as JSON' },
  FST_ERR_CTP_BODY_TOO_LARGE: { status: 413, code: 'payload_too_large', message: 'The request body is too large' },
  FST_ERR_CTP_INVALID_MEDIA_TYPE: { status: 415, code: 'unsupported_media_type', message: 'Unsupported Content-Type' },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: { status: 400, code: 'bad_request', message: 'Invalid Content-Length' },
};

function fieldErrors(validation: ReadonlyArray<{ instancePath?: string; message?: string }>): FieldErrors {
  const errors: FieldErrors = {};
  for (const v of validation) {
    const field = (v.instancePath ?? '').replace(/^\//, '').replaceAll('/', '.') || 'body';
    (errors[field] ??= []).push(v.message ?? 'is invalid');
  }
  return errors;
}

function send(reply: FastifyReply, status: number, body: ErrorBody, headers: Record<string, string> = {}) {
  void reply.code(status).headers(headers).type('application/json; charset=utf-8').send(body);
}


export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((err: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    if (err instanceof AppError) {
      const body: ErrorBody = { status: false, message: err.message, code: err.code };
      if (err instanceof Invalid) body.errors = err.errors;
      return send(reply, err.statusCode, body, err.headers);
    }
    if (hasZodFastifySchemaValidationErrors(err)) {
      // A malformed id in the path names nothing that exists.
      if (err.validationContext === 'params') {
        return send(reply, 404, { status: false, message: 'Not found', code: 'not_found' });
      }
      const errors = fieldErrors(err.validation);
      const fields = Object.keys(errors);
      return send(reply, 422, {
        status: false,
        message: `Invalid ${fields.length === 1 ? 'field' : 'fields'}: ${fields.join(', ')}`,
        code: 'validation_failed',
        errors,
      });
    }
    const known = err.code ? FRAMEWORK_ERRORS[err.code] : undefined;
    if (known) return send(reply, known.status, { status: false, message: known.message, code: known.code });
    if (!isResponseSerializationError(err) && err.statusCode && err.statusCode >= 400 && err.statusCode < 500) {
      return send(reply, err.statusCode, {
        status: false,
        message: err.message,
        code: (err.code ?? 'bad_request').replace(/^FST_ERR_/, '').toLowerCase(),
      });
    }
    request.log.error({ err: safeError(err) }, 'request failed');
    return send(reply, 500, { status: false, message: 'Internal server error', code: 'internal_error' });
  });

  app.setNotFoundHandler((_request, reply) => {
    send(reply, 404, { status: false, message: 'Route not found', code: 'route_not_found' });
  });
}
