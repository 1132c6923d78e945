/**
 * Which sync protocol a socket speaks, decided the same way on both sides: the server names
 * the versions it speaks in its 4426 close reason, and a device that said a newer one steps
 * down to the highest version both speak (docs/sync-protocol.md, Versioning). A fleet is
 * then safe in either upgrade order: apps before servers, or servers before apps.
 */
import { SUPPORTED_PROTOCOLS } from './messages.ts';

/** The 4426 close reason: the versions `spoken`, in a form `protocolsNamedIn` reads back. */
export function protocolUnsupportedReason(spoken: readonly number[] = SUPPORTED_PROTOCOLS): string {
  return `This server speaks protocols ${spoken.join(', ')}`;
}

/**
 * The versions a 4426 close reason names, in the form `protocolUnsupportedReason` writes (every
 * server has written it so since version 2); empty when it names none. A close reason is at
 * most 123 bytes, so this reads a bounded text.
 */
export function protocolsNamedIn(reason: string): number[] {
  const list = /protocols?\s+([\d,\s]+)/i.exec(reason)?.[1] ?? '';
  return list
    .split(',')
    .map((s) => s.trim())
    .filter((s) => /^\d{1,6}$/.test(s))
    .map(Number)
    .filter((n) => n > 0);
}

/**
 * The version to say next after a server refused `said` and named `named`: the highest one
 * below `said` that both `spoken` (this side's) and `named` hold, or null when there is none
 * (an app too old or too new for that server: only an update helps). Strictly below `said`,
 * so a server that refuses what it named cannot make a device loop.
 */
export function protocolAfterRefusal(said: number, named: readonly number[], spoken: readonly number[] = SUPPORTED_PROTOCOLS): number | null {
  const both = spoken.filter((v) => v < said && named.includes(v));
  return both.length === 0 ? null : Math.max(...both);
}
