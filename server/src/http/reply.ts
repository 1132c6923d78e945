import { errorBody } from '@fieldchart/schema/api';

/** Success bodies, built in one place so every route answers the contract's envelope. */
export function ok<T>(data: T, message?: string): { status: true; data: T; message?: string } {
  return message === undefined ? { status: true, data } : { status: true, data, message };
}

export function done(message: string): { status: true; message: string } {
  return { status: true, message };
}

/** Documents the error statuses a route can answer, for the OpenAPI document. */
export function errors(...codes: Array<400 | 401 | 403 | 404 | 409 | 413 | 415 | 422 | 429 | 503>) {
  return Object.fromEntries(codes.map((c) => [c, errorBody])) as Record<number, typeof errorBody>;
}
