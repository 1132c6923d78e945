/**
 * The feed cursor the device stores: opaque to it, `v1.<snapshot>.<window from>.<window to>.
 * <scope hash>.<config hash>`. The snapshot is PostgreSQL's (`xmin:xmax:xip,…`); the window is
 * the visit dates the device was last sent; the scope hash changes when the clinician's seat
 * does (the feed then resets); the config hash says which organization configuration the
 * device holds (a different one is sent again).
 */
import { createHash } from 'node:crypto';

export interface Cursor {
  readonly snapshot: string;
  readonly windowFrom: string;
  readonly windowTo: string;
  readonly scope: string;
  readonly config: string;
}

const SNAPSHOT = /^\d+:\d+:(\d+(,\d+)*)?$/;
const DATE = /^\d{4}-\d{2}-\d{2}$/;
const HASH = /^[0-9a-f]{12}$/;

export function encodeCursor(c: Cursor): string {
  return ['v1', c.snapshot, c.windowFrom, c.windowTo, c.scope, c.config].join('.');
}

/** Null for anything this server did not write: the feed then starts over with a reset. */
export function decodeCursor(text: string | null): Cursor | null {
  if (!text) return null;
  const parts = text.split('.');
  if (parts.length !== 6 || parts[0] !== 'v1') return null;
  const [, snapshot = '', windowFrom = '', windowTo = '', scope = '', config = ''] = parts;
  if (!SNAPSHOT.test(snapshot) || !DATE.test(windowFrom) || !DATE.test(windowTo) || !HASH.test(scope) || !HASH.test(config)) return null;
  return { snapshot, windowFrom, windowTo, scope, config };
}

export function shortHash(value: unknown): string {
  return createHash('sha256').update(JSON.stringify(value)).digest('hex').slice(0, 12);
}
