/** Looking for values in every stored byte of a device's data directory. */
import fs from 'node:fs';
import path from 'node:path';

/** Every file under `dir`, recursively, with its bytes. */
export function filesUnder(dir: string, root = dir): { file: string; bytes: Buffer }[] {
  const out: { file: string; bytes: Buffer }[] = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...filesUnder(p, root));
    else if (entry.isFile()) out.push({ file: path.relative(root, p), bytes: fs.readFileSync(p) });
  }
  return out;
}

/**
 * The ways a text could sit in a file: UTF-8, UTF-16 (both orders), hex (both cases) and
 * base64 at each of its three alignments (the part of it that does not depend on the bytes
 * around it).
 */
export function encodingsOf(text: string): { how: string; bytes: Buffer }[] {
  const utf8 = Buffer.from(text, 'utf8');
  const utf16le = Buffer.from(text, 'utf16le');
  const utf16be = Buffer.from(utf16le).swap16();
  const out = [
    { how: 'utf-8', bytes: utf8 },
    { how: 'utf-16le', bytes: utf16le },
    { how: 'utf-16be', bytes: utf16be },
    { how: 'hex', bytes: Buffer.from(utf8.toString('hex')) },
    { how: 'HEX', bytes: Buffer.from(utf8.toString('hex').toUpperCase()) },
  ];
  for (let k = 0; k < 3; k++) {
    const b64 = Buffer.concat([Buffer.alloc(k, 0x20), utf8]).toString('base64');
    // The first 4 characters carry the k bytes before it, the last 4 the bytes after it.
    out.push({ how: `base64+${k}`, bytes: Buffer.from(b64.slice(k === 0 ? 0 : 4, -4)) });
  }
  return out;
}

/** Where each of `texts` occurs under `dir`, in any of its encodings: `text (how) in file`. */
export function findTexts(dir: string, texts: readonly string[]): string[] {
  const needles = texts.flatMap((t) => encodingsOf(t).map((e) => ({ text: t, ...e })));
  const found: string[] = [];
  for (const { file, bytes } of filesUnder(dir)) {
    for (const n of needles) if (bytes.includes(n.bytes)) found.push(`${n.text} (${n.how}) in ${file}`);
  }
  return found;
}

/** Where `needle` occurs under `dir`, as raw bytes. */
export function findBytes(dir: string, needle: Buffer): string[] {
  return filesUnder(dir)
    .filter(({ bytes }) => bytes.includes(needle))
    .map(({ file }) => file);
}
