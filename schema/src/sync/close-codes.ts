/**
 * WebSocket close codes of the sync channel (docs/sync-protocol.md, "Close codes"), named once
 * for the server and client-lib.
 */
export const CLOSE_CODES = {
  normal: 1000,
  going_away: 1001,
  internal_error: 1011,
  /** Sent by a device: it closes to start over (user changed, a frame it could not handle). */
  client_reconnect: 4000,
  bad_message: 4400,
  unauthorized: 4401,
  account_disabled: 4403,
  auth_timeout: 4408,
  superseded: 4409,
  scope_changed: 4410,
  /** An operator revoked this device (`fieldchart device revoke`): it wipes itself and stops. */
  device_revoked: 4411,
  /**
   * The device holds data synced under an organization seat that has since ended: it wipes
   * itself (cache, outbox, drafts, key) and connects again with no cursor.
   */
  organization_left: 4412,
  protocol_unsupported: 4426,
  too_many_connections: 4429,
} as const;

export type CloseCodeName = keyof typeof CLOSE_CODES;
export type CloseCode = (typeof CLOSE_CODES)[CloseCodeName];

/** The name of a close code, or null for one the protocol does not define. */
export function closeCodeName(code: number): CloseCodeName | null {
  for (const [name, value] of Object.entries(CLOSE_CODES)) if (value === code) return name as CloseCodeName;
  return null;
}

/** Whether a device should reconnect (with backoff) after the server closed with `code`. */
export function shouldReconnect(code: number): boolean {
  const name = closeCodeName(code);
  return name === null || !['normal', 'account_disabled', 'device_revoked', 'superseded', 'protocol_unsupported'].includes(name);
}
