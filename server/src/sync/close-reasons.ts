/**
 * Why a socket is refused or closed for its session or seat, and the close code each reason
 * is (docs/sync-protocol.md, Close codes): the one place that maps them, for hello, the
 * in-band refresh, rechecks on notifications and a batch of mutations alike.
 */
import type { CloseCodeName } from '@fieldchart/schema/sync';

export type Refusal =
  | 'invalid_token'
  | 'token_expired'
  | 'session_revoked'
  | 'account_disabled'
  | 'seat_changed'
  | 'device_revoked'
  | 'organization_left';

/** A session's state as the sessions service answers it, as a refusal (null: live). */
export function refusalOfSession(state: 'live' | 'revoked' | 'device_revoked' | 'disabled'): Refusal | null {
  switch (state) {
    case 'live':
      return null;
    case 'revoked':
      return 'session_revoked';
    // The session ended with its device: the device is told to wipe (4411), not to sign in again.
    case 'device_revoked':
      return 'device_revoked';
    case 'disabled':
      return 'account_disabled';
  }
}

const CLOSES: Record<Refusal, { readonly code: CloseCodeName; readonly text: string }> = {
  invalid_token: { code: 'unauthorized', text: 'Invalid or expired token' },
  token_expired: { code: 'unauthorized', text: 'Token expired' },
  session_revoked: { code: 'unauthorized', text: 'Session revoked' },
  account_disabled: { code: 'account_disabled', text: 'Account disabled' },
  seat_changed: { code: 'scope_changed', text: 'Organization seat changed' },
  device_revoked: { code: 'device_revoked', text: 'Device revoked' },
  organization_left: { code: 'organization_left', text: 'Organization seat ended: wipe its data and connect again' },
};

export function closeFor(refusal: Refusal): { readonly code: CloseCodeName; readonly text: string } {
  return CLOSES[refusal];
}
