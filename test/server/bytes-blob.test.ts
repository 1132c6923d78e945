/**
 * db/bytes-blob.ts: the Blob PGlite is handed for a data dir archive and its file-system bundle.
 * It must answer as a Blob of the same bytes does, whichever method reads it.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { BytesBlob } from '../../server/src/db/bytes-blob.ts';

async function streamed(blob: Blob): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  const reader = blob.stream().getReader();
  for (let r = await reader.read(); !r.done; r = await reader.read()) chunks.push(r.value);
  return new Uint8Array(Buffer.concat(chunks));
}

test('a BytesBlob reads as a Blob of the same bytes: size, type, arrayBuffer, text, stream and slices', async () => {
  await fc.assert(
    fc.asyncProperty(fc.uint8Array({ maxLength: 4096 }), fc.string({ maxLength: 30 }), fc.integer({ min: -5000, max: 5000 }), fc.integer({ min: -5000, max: 5000 }), async (bytes, type, start, end) => {
      const lowerType = type.toLowerCase().replace(/[^\x20-\x7e]/g, '');
      const real = new Blob([bytes], { type: lowerType });
      const ours = new BytesBlob(bytes.slice().buffer, lowerType);
      assert.ok(ours instanceof Blob);
      assert.equal(ours.size, real.size);
      assert.equal(ours.type, real.type);
      assert.deepEqual(new Uint8Array(await ours.arrayBuffer()), new Uint8Array(await real.arrayBuffer()));
      assert.equal(await ours.text(), await real.text());
      assert.deepEqual(await streamed(ours), await streamed(real));
      const [a, b] = [ours.slice(start, end, 'x/y'), real.slice(start, end, 'x/y')];
      assert.equal(a.size, b.size);
      assert.equal(a.type, b.type);
      assert.deepEqual(new Uint8Array(await a.arrayBuffer()), new Uint8Array(await b.arrayBuffer()));
    }),
    { numRuns: 200 },
  );
});
