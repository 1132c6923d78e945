/**
 * The y-protocols sync messages of a draft, as they travel in `doc` frames (base64): parsed
 * and checked before anything is stored, so a malformed update is refused instead of
 * poisoning every later load of the document.
 */
import * as decoding from 'lib0/decoding';
import * as encoding from 'lib0/encoding';
import { messageYjsSyncStep1, messageYjsSyncStep2, messageYjsUpdate, writeSyncStep1, writeSyncStep2, writeUpdate } from 'y-protocols/sync';
import * as Y from 'yjs';

/** The largest update a device may send in one message (decoded). */
export const MAX_UPDATE_BYTES = 1024 * 1024;
// A message is the update plus its type and length prefixes (a few bytes).
const MAX_MESSAGE_BYTES = MAX_UPDATE_BYTES + 16;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

export type SyncMessage =
  | { readonly kind: 'step1'; readonly stateVector: Uint8Array }
  | { readonly kind: 'update'; readonly update: Uint8Array };

export type ParseResult = { readonly ok: true; readonly message: SyncMessage } | { readonly ok: false; readonly code: 'invalid_update' | 'too_large' };

/** One sync message from base64; step 2 and update both carry an update and are handled alike. */
export function parseSyncMessage(base64: string): ParseResult {
  // Checked on the text first: the size of the decoded bytes is known without decoding them.
  if (base64.length > Math.ceil(MAX_MESSAGE_BYTES / 3) * 4) return { ok: false, code: 'too_large' };
  if (base64.length % 4 !== 0 || !BASE64.test(base64)) return { ok: false, code: 'invalid_update' };
  const bytes = Buffer.from(base64, 'base64');
  try {
    const decoder = decoding.createDecoder(bytes);
    const type = decoding.readVarUint(decoder);
    const payload = decoding.readVarUint8Array(decoder);
    // One message per frame: trailing bytes mean the frame is not what it claims to be.
    if (decoding.hasContent(decoder)) return { ok: false, code: 'invalid_update' };
    if (type === messageYjsSyncStep1) {
      Y.decodeStateVector(payload);
      return { ok: true, message: { kind: 'step1', stateVector: payload } };
    }
    if (type === messageYjsSyncStep2 || type === messageYjsUpdate) {
      if (payload.length > MAX_UPDATE_BYTES) return { ok: false, code: 'too_large' };
      // Decodes every struct and the delete set: truncated or garbled updates throw here.
      Y.decodeUpdate(payload);
      return { ok: true, message: { kind: 'update', update: payload } };
    }
    return { ok: false, code: 'invalid_update' };
  } catch {
    return { ok: false, code: 'invalid_update' };
  }
}

const toBase64 = (encoder: encoding.Encoder) => Buffer.from(encoding.toUint8Array(encoder)).toString('base64');

export function step1Message(doc: Y.Doc): string {
  const encoder = encoding.createEncoder();
  writeSyncStep1(encoder, doc);
  return toBase64(encoder);
}

/** What `doc` has that a peer with `stateVector` lacks (throws on a state vector Yjs cannot read). */
export function step2Message(doc: Y.Doc, stateVector: Uint8Array): string {
  const encoder = encoding.createEncoder();
  writeSyncStep2(encoder, doc, stateVector);
  return toBase64(encoder);
}

export function updateMessage(update: Uint8Array): string {
  const encoder = encoding.createEncoder();
  writeUpdate(encoder, update);
  return toBase64(encoder);
}

/**
 * Whether applying `update` to `doc` would change nothing: every struct is already known and
 * every deletion already done. A device's step 2 carries its whole delete set on every
 * reconnect; storing it again would only grow the table.
 */
export function addsNothing(doc: Y.Doc, update: Uint8Array): boolean {
  const { structs, ds } = Y.decodeUpdate(Y.diffUpdate(update, Y.encodeStateVector(doc)));
  if (structs.length > 0) return false;
  for (const [client, ranges] of ds.clients) {
    for (const { clock, len } of ranges) if (!allDeleted(doc, client, clock, clock + len)) return false;
  }
  return true;
}

function allDeleted(doc: Y.Doc, client: number, from: number, to: number): boolean {
  const structs = doc.store.clients.get(client);
  if (!structs || to > Y.getState(doc.store, client)) return false;
  for (let clock = from; clock < to; ) {
    const struct = structs[Y.findIndexSS(structs, clock)];
    if (!struct?.deleted) return false;
    clock = struct.id.clock + struct.length;
  }
  return true;
}
