/**
 * The audio type, decided from the first bytes of the file alone (never the file name or the
 * declared content type, which a client sets to anything). A pure rule, no I/O.
 */
export type AudioFormat = 'm4a' | 'wav' | 'mp3';

/** Bytes needed to decide. */
export const SNIFF_BYTES = 12;

export const CONTENT_TYPES: Record<AudioFormat, string> = {
  m4a: 'audio/mp4',
  wav: 'audio/wav',
  mp3: 'audio/mpeg',
};

/** An MPEG audio frame header: 11 sync bits, a valid version, layer, bitrate and sample rate. */
function isMpegFrame(b: Buffer): boolean {
  if (b.length < 4 || b[0] !== 0xff || (b[1]! & 0xe0) !== 0xe0) return false;
  const version = (b[1]! >> 3) & 0x03; // 01 reserved
  const layer = (b[1]! >> 1) & 0x03; // 00 reserved
  const bitrate = (b[2]! >> 4) & 0x0f; // 1111 bad
  const rate = (b[2]! >> 2) & 0x03; // 11 reserved
  return version !== 1 && layer !== 0 && bitrate !== 0x0f && rate !== 3;
}

export function sniffAudio(head: Buffer): AudioFormat | null {
  if (head.length >= 12 && head.toString('latin1', 0, 4) === 'RIFF' && head.toString('latin1', 8, 12) === 'WAVE') return 'wav';
  // ISO base media (mp4/m4a/mov): a box size, then the `ftyp` box type.
  if (head.length >= 8 && head.toString('latin1', 4, 8) === 'ftyp') return 'm4a';
  if (head.length >= 3 && head.toString('latin1', 0, 3) === 'ID3') return 'mp3';
  if (isMpegFrame(head)) return 'mp3';
  return null;
}
