/**
 * What the server's word means for the device, decided once: a socket's close code (and
 * reason), or the HTTP fallback's refusal, turned into the engine's next step. A pure rule —
 * no socket, no database, no clock — so the engine only carries the step out.
 */
import { CLOSE_CODES, closeCodeName, protocolAfterRefusal, protocolsNamedIn } from '@fieldchart/schema/sync';
import { FieldchartApiError } from '../rest/index.ts';
import { HANDSHAKE_TIMEOUT } from './connection.ts';

/** The least pause before a socket taken over by another install (4409) comes back. */
export const SUPERSEDED_PAUSE_MS = 1_000;

/** The close reason of a socket this side dropped because the platform said the network went. */
export const WENT_OFFLINE = 'offline';

/** A failure to show as the status's last error. */
export interface StepError {
  readonly code: string;
  readonly message: string;
}

/** The server ended this device's right to the data: stop, forget the session, wipe. */
export interface EndStep {
  readonly next: 'end';
  readonly reason: 'account_disabled' | 'device_revoked';
  readonly error: StepError;
}

export type CloseStep =
  /** The token was refused: a fresh one, then a fresh socket. */
  | { readonly next: 'refresh'; readonly error: StepError }
  | EndStep
  /** The organization seat ended: wipe the device, keep the session, connect again with no cursor. */
  | { readonly next: 'wipe'; readonly error: StepError }
  /** Another install took this client id's socket: come back after a pause, then part ids. */
  | { readonly next: 'superseded'; readonly error: StepError; readonly pauseMs: number }
  /** The server speaks only older protocols, `protocol` among them: say that one, at once. */
  | { readonly next: 'step_down'; readonly error: null; readonly protocol: number }
  /** Nothing this app can do (an update is needed): stop. */
  | { readonly next: 'halt'; readonly reason: string; readonly error: StepError }
  /**
   * Try again with backoff. `attempt`: what the close says about this socket's open — a
   * handshake that ran out of time (the next gets longer), an open that failed (websockets may
   * be blocked: count towards HTTP), or nothing.
   */
  | { readonly next: 'retry'; readonly error: StepError | null; readonly attempt: 'handshake_timed_out' | 'open_failed' | null };

export interface CloseContext {
  /** The server had said `welcome` on this socket. */
  readonly welcomed: boolean;
  /** The platform says the device is offline (false when it does not know). */
  readonly offline: boolean;
  /** The protocol version this socket's hello said. */
  readonly said: number;
}

/** The step after a socket closed with `code` and `reason`. */
export function stepAfterClose(code: number, reason: string, ctx: CloseContext): CloseStep {
  const name = closeCodeName(code);
  switch (code) {
    case CLOSE_CODES.unauthorized:
      return { next: 'refresh', error: { code: 'unauthorized', message: reason || 'the server refused the access token' } };
    case CLOSE_CODES.account_disabled:
      return { next: 'end', reason: 'account_disabled', error: { code: 'account_disabled', message: reason || 'the account is disabled' } };
    case CLOSE_CODES.device_revoked:
      return { next: 'end', reason: 'device_revoked', error: { code: 'device_revoked', message: reason || 'this device was revoked' } };
    case CLOSE_CODES.organization_left:
      // What the device holds came with an organization seat that has ended: it goes —
      // unsynced writes and drafts too, never uploaded — and the device starts over with no
      // cursor, under the seat the user has now. The session stays.
      return { next: 'wipe', error: { code: 'organization_left', message: reason || 'the organization seat ended' } };
    case CLOSE_CODES.superseded:
      // Another install says hello with this client id (a copied data dir: a restored
      // backup, a cloned phone; the same install's own new socket never reaches here, its
      // old one is no longer the engine's). Come back after a pause and part ids: the next
      // welcome re-keys once what the server may have processed is answered.
      return { next: 'superseded', pauseMs: SUPERSEDED_PAUSE_MS, error: { code: 'superseded', message: reason || 'another install connected with this client id' } };
    case CLOSE_CODES.protocol_unsupported: {
      // A server not yet upgraded names the versions it speaks: an app that shipped first
      // speaks the newest of them instead of stopping (docs/sync-protocol.md, Versioning).
      const lower = protocolAfterRefusal(ctx.said, protocolsNamedIn(reason));
      if (lower !== null) return { next: 'step_down', error: null, protocol: lower };
      return { next: 'halt', reason: name ?? String(code), error: { code: name ?? String(code), message: reason || `closed with ${code}` } };
    }
    default: {
      let error: StepError | null = null;
      if ((code === CLOSE_CODES.client_reconnect && reason === WENT_OFFLINE) || ctx.offline) {
        error = { code: 'offline', message: 'the device is offline' };
      } else if (code !== CLOSE_CODES.normal || ctx.welcomed) {
        error = { code: name ?? (code === 1006 ? 'network' : `closed_${code}`), message: reason || (code === 1006 ? 'connection lost' : `closed with ${code}`) };
      }
      // A handshake that ran out of time says nothing about websockets being blocked (the
      // server may be slow): it gets longer next time, and does not bring in HTTP beside it.
      // Opens refused while the platform knows it is offline say nothing of websockets either.
      const attempt = ctx.welcomed ? null : reason === HANDSHAKE_TIMEOUT ? 'handshake_timed_out' : ctx.offline ? null : 'open_failed';
      return { next: 'retry', error, attempt };
    }
  }
}

/**
 * The step after the HTTP fallback's request failed with `err`: a revoked device (403; 401 when
 * the token's session ended with it) ends as it does on the socket's 4411; anything else is a
 * failed send the uploader retries (null).
 */
export function stepAfterRefusal(err: unknown): EndStep | null {
  if (err instanceof FieldchartApiError && (err.status === 403 || err.status === 401) && err.code === 'device_revoked') {
    return { next: 'end', reason: 'device_revoked', error: { code: 'device_revoked', message: err.message } };
  }
  return null;
}
