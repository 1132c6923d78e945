/**
 * Signature images: base64 (optionally as a `data:image/…;base64,` URL) of a PNG or JPEG,
 * recognised by its bytes, never by a declared type.
 */
import { Invalid } from '../../errors.ts';

export const SIGNATURE_MAX_BYTES = 512 * 1024;

export interface SignatureImage {
  readonly mime: 'image/png' | 'image/jpeg';
  readonly bytes: Buffer;
}

const PNG_MAGIC = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** What the bytes are, or null when they are neither a PNG nor a JPEG. */
export function sniffImage(bytes: Buffer): SignatureImage['mime'] | null {
  // PNG: signature, then the IHDR chunk first (length 13).
  if (bytes.length >= 33 && bytes.subarray(0, 8).equals(PNG_MAGIC) && bytes.toString('latin1', 12, 16) === 'IHDR') return 'image/png';
  // JPEG: SOI marker followed by another marker, and an EOI marker at the end.
  if (bytes.length >= 4 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff && bytes[bytes.length - 2] === 0xff && bytes[bytes.length - 1] === 0xd9) {
    return 'image/jpeg';
  }
  return null;
}

/** Decodes and checks a submitted signature; 422 naming `signature` when it is not acceptable. */
export function parseSignature(input: string): SignatureImage {
  const fail = (message: string) => Invalid.field('signature', message, 'invalid_signature');
  const body = input.replace(/^data:image\/(png|jpeg|jpg);base64,/i, '').replace(/\s+/g, '');
  if (body.length === 0 || body.length % 4 !== 0 || !BASE64.test(body)) throw fail('must be base64-encoded');
  if ((body.length / 4) * 3 > SIGNATURE_MAX_BYTES + 2) throw fail(`must be at most ${SIGNATURE_MAX_BYTES / 1024} KB`);
  const bytes = Buffer.from(body, 'base64');
  if (bytes.length > SIGNATURE_MAX_BYTES) throw fail(`must be at most ${SIGNATURE_MAX_BYTES / 1024} KB`);
  const mime = sniffImage(bytes);
  if (!mime) throw fail('must be a PNG or JPEG image');
  return { mime, bytes };
}
