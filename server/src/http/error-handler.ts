import type { Duplex } from 'node:stream';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors, isResponseSerializationError } from 'fastify-type-provider-zod';
import type { ErrorBody } from '@fieldchart/schema/api';
import { fieldErrorsFromIssues } from '@fieldchart/schema/rules';
import { AppError, DatabaseUnavailable, Invalid, type FieldErrors } from '../errors.ts';
import { sqlState } from '../db/database.ts';
import { isDatabaseUnreachable } from '../db/reachability.ts';
import { safeError } from '../log-safety.ts';

/** Fastify's own 4xx errors, by code, in the contract's terms. */
const FRAMEWORK_ERRORS: Record<string, { status: number; code: string; message: string }> = {
  FST_ERR_CTP_INVALID_JSON_BODY: { status: 400, code: 'malformed_json', message: 'The request body is not valid JSON' },
  FST_ERR_CTP_EMPTY_JSON_BODY: { status: 400, code: 'malformed_json', message: 'The request body is empty but declared as JSON' },
  FST_ERR_CTP_BODY_TOO_LARGE: { status: 413, code: 'payload_too_large', message: 'The request body is too large' },
  FST_ERR_CTP_INVALID_MEDIA_TYPE: { status: 415, code: 'unsupported_media_type', message: 'Unsupported Content-Type' },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: { status: 400, code: 'bad_request', message: 'Invalid Content-Length' },
  FST_ERR_CTP_INVALID_TYPE: { status: 400, code: 'bad_request', message: 'Invalid Content-Type' },
  FST_ERR_CTP_INVALID_CONTENT_TYPE: { status: 415, code: 'unsupported_media_type', message: 'Unsupported Content-Type' },
  // A path parameter longer than the router takes, or not percent-decodable, names no record:
  // the same 404 as a malformed or unknown id (and the path is not echoed).
  FST_ERR_MAX_PARAM_LENGTH: { status: 404, code: 'not_found', message: 'Not found' },
  FST_ERR_BAD_URL: { status: 404, code: 'not_found', message: 'Not found' },
  FST_ERR_ASYNC_CONSTRAINT: { status: 400, code: 'bad_request', message: 'Bad request' },
  // `__proto__` / `constructor.prototype` keys in a JSON body (prototype poisoning).
  FST_ERR_CTP_INVALID_JSON: { status: 400, code: 'malformed_json', message: 'The request body is not valid JSON' },
};

/**
 * PostgreSQL's class 22 (data exception): a value the database cannot hold. The zod rules at
 * the edge (schema/src/api/common.ts) keep these out; if one slips through, it is still the
 * input's fault, so a 422 that names no value rather than a 500.
 */
const DATA_ERRORS: Record<string, string> = {
  '22P05': 'contains a character the database cannot store',
  '22021': 'contains an invalid byte sequence',
  '22008': 'is a date or time out of range',
  '22007': 'is not a valid date or time',
  '22003': 'is a number out of range',
  '22001': 'is too long',
  '22P02': 'has an invalid format',
  '22023': 'is not an accepted value',
};

/** The contract's body for a framework error, or null when `err` is not one we know. */
export function frameworkErrorBody(err: { code?: string }): { status: number; body: ErrorBody } | null {
  const known = err.code ? FRAMEWORK_ERRORS[err.code] : undefined;
  return known ? { status: known.status, body: { status: false, message: known.message, code: known.code } } : null;
}

function fieldErrors(validation: ReadonlyArray<{ instancePath?: string; message?: string }>): FieldErrors {
  // The type provider reports each zod issue with its path as a JSON pointer.
  const issues = validation.map((v) => ({ path: (v.instancePath ?? '').replace(/^\//, '').split('/'), message: v.message ?? 'is invalid' }));
  return fieldErrorsFromIssues(issues, { root: 'body' });
}

const STATUS_TEXT: Record<number, string> = {
  400: 'Bad request',
  404: 'Not found',
  405: 'Method not allowed',
  406: 'Not acceptable',
  408: 'Request timeout',
  413: 'The request body is too large',
  414: 'URI too long',
  415: 'Unsupported Content-Type',
  431: 'Request header fields too large',
};

function send(reply: FastifyReply, status: number, body: ErrorBody, headers: Record<string, string> = {}) {
  void reply.code(status).headers(headers).type('application/json; charset=utf-8').send(body);
}

export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((err: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    if (err instanceof AppError) {
      // A refusal of ours is the client's to read; an outside service failing the request
      // (a store, the audio bucket) is also the operator's: logged, redacted, with its cause.
      // The database being away is logged where it is found (database-gate.ts), not per request.
      if (err.statusCode >= 500 && !err.loggedWhereFound) request.log.warn({ err: safeError(err.cause ?? err), code: err.code }, 'request answered unavailable');
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
    const framework = frameworkErrorBody(err);
    if (framework) return send(reply, framework.status, framework.body);
    const state = sqlState(err);
    const dataError = state ? (DATA_ERRORS[state] ?? (state.startsWith('22') ? 'is not a value the database accepts' : undefined)) : undefined;
    if (dataError) {
      request.log.warn({ err: safeError(err) }, 'database refused a value the edge let through');
      return send(reply, 422, { status: false, message: `A value ${dataError}`, code: 'invalid_value', errors: { body: [`a value ${dataError}`] } });
    }
    if (!isResponseSerializationError(err) && err.statusCode && err.statusCode >= 400 && err.statusCode < 500) {
      // Framework messages can quote the input (a path, a header): only the status and code go out.
      const code = (err.code ?? 'bad_request').replace(/^FST_ERR_/, '').toLowerCase();
      return send(reply, err.statusCode, { status: false, message: STATUS_TEXT[err.statusCode] ?? 'Bad request', code });
    }
    if (isDatabaseUnreachable(err)) {
      // PostgreSQL restarting or the network to it down: the client retries, nothing is wrong
      // with the request (http/database-gate.ts then answers the next ones at once).
      request.log.warn({ err: safeError(err) }, 'database unreachable');
      const unavailable = new DatabaseUnavailable();
      return send(reply, unavailable.statusCode, { status: false, message: unavailable.message, code: unavailable.code }, unavailable.headers);
    }
    request.log.error({ err: safeError(err) }, 'request failed');
    return send(reply, 500, { status: false, message: 'Internal server error', code: 'internal_error' });
  });

  app.setNotFoundHandler((_request, reply) => {
    send(reply, 404, { status: false, message: 'Route not found', code: 'route_not_found' });
  });
}

/** Fastify's `frameworkErrors` hook: router errors raised before a route is chosen. */
export function sendFrameworkError(err: { code?: string }, reply: FastifyReply): void {
  const mapped = frameworkErrorBody(err) ?? { status: 400, body: { status: false, message: 'Bad request', code: 'bad_request' } };
  send(reply, mapped.status, mapped.body);
}

/**
 * Errors Node's HTTP parser raises before Fastify sees a request (a header block over 16 KiB,
 * a long URL, a request that took too long to arrive, garbage): answered in the contract's
 * shape, never echoing the input, then the socket is closed as Node does.
 */
export function clientErrorResponse(err: { code?: string }): { status: number; body: ErrorBody } {
  switch (err.code) {
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return { status: 408, body: { status: false, message: 'The request took too long to arrive', code: 'request_timeout' } };
    case 'HPE_HEADER_OVERFLOW':
      return { status: 431, body: { status: false, message: 'Request header fields too large', code: 'headers_too_large' } };
    case 'HPE_URI_TOO_LONG':
      return { status: 414, body: { status: false, message: 'URI too long', code: 'uri_too_long' } };
    default:
      return { status: 400, body: { status: false, message: 'Bad request', code: 'bad_request' } };
  }
}

export function writeClientError(err: { code?: string }, socket: Duplex): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const { status, body } = clientErrorResponse(err);
  const json = JSON.stringify(body);
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_TEXT[status] ?? 'Bad request'}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        // The headers every other answer gets from http/security-headers.ts.
        'X-Content-Type-Options: nosniff\r\nCache-Control: no-store\r\n' +
        `Content-Length: ${Buffer.byteLength(json)}\r\nConnection: close\r\n\r\n${json}`,
    );
  }
  socket.destroy();
}
