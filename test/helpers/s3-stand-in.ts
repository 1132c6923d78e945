/**
 * A small stand-in of the S3 protocol on 127.0.0.1, path-style (`/<bucket>/<key>`): PutObject,
 * GetObject (with Range), DeleteObject and the multipart upload calls (Create, UploadPart,
 * Complete, Abort). Requests must carry a SigV4 Authorization header for the expected access
 * key; every request is recorded so tests can check what the client did.
 */
import { randomUUID, createHash } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface S3StandIn {
  readonly endpoint: string;
  readonly bucket: string;
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  /** Stored objects by key. */
  readonly objects: Map<string, Buffer>;
  /** `METHOD ?query-kind` of every request, e.g. `PUT part`, `POST create-multipart`. */
  readonly calls: string[];
  /** Multipart uploads neither completed nor aborted. */
  readonly openUploads: () => number;
  /** While on, requests are taken and never read nor answered (a store gone quiet). */
  stall(on: boolean): void;
  close(): Promise<void>;
}

const xml = (body: string) => `<?xml version="1.0" encoding="UTF-8"?>\n${body}`;
const etag = (b: Buffer) => `"${createHash('md5').update(b).digest('hex')}"`;

export async function startS3StandIn(opts: { bucket?: string } = {}): Promise<S3StandIn> {
  const bucket = opts.bucket ?? 'fieldchart-audio';
  const accessKeyId = 'AKIAFIELDCHARTTEST';
  const secretAccessKey = 'stand-in-secret-key';
  const objects = new Map<string, Buffer>();
  const uploads = new Map<string, { key: string; parts: Map<number, Buffer> }>();
  const calls: string[] = [];

  const send = (res: http.ServerResponse, status: number, body = '', headers: Record<string, string> = {}) => {
    res.writeHead(status, { ...(body ? { 'content-type': 'application/xml' } : {}), ...headers });
    res.end(body);
  };
  const error = (res: http.ServerResponse, status: number, code: string) =>
    send(res, status, xml(`<Error><Code>${code}</Code><Message>${code}</Message><RequestId>stand-in</RequestId></Error>`));

  let stalled = false;
  const server = http.createServer((req, res) => {
    if (stalled) return;
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://stand-in');
      const q = url.searchParams;
      const auth = req.headers.authorization ?? '';
      if (!auth.startsWith(`AWS4-HMAC-SHA256 Credential=${accessKeyId}/`)) return error(res, 403, 'AccessDenied');
      const [, b, ...rest] = url.pathname.split('/');
      const key = decodeURIComponent(rest.join('/'));
      if (b !== bucket) return error(res, 404, 'NoSuchBucket');
      const body = Buffer.concat(chunks);
      const method = req.method ?? 'GET';

      if (method === 'POST' && q.has('uploads')) {
        calls.push('POST create-multipart');
        const id = randomUUID();
        uploads.set(id, { key, parts: new Map() });
        return send(res, 200, xml(`<InitiateMultipartUploadResult><Bucket>${bucket}</Bucket><Key>${key}</Key><UploadId>${id}</UploadId></InitiateMultipartUploadResult>`));
      }
      if (method === 'PUT' && q.has('uploadId')) {
        calls.push('PUT part');
        const u = uploads.get(q.get('uploadId') ?? '');
        if (!u) return error(res, 404, 'NoSuchUpload');
        u.parts.set(Number(q.get('partNumber')), body);
        return send(res, 200, '', { etag: etag(body) });
      }
      if (method === 'POST' && q.has('uploadId')) {
        calls.push('POST complete-multipart');
        const id = q.get('uploadId') ?? '';
        const u = uploads.get(id);
        if (!u) return error(res, 404, 'NoSuchUpload');
        const numbers = [...body.toString('utf8').matchAll(/<PartNumber>(\d+)<\/PartNumber>/g)].map((m) => Number(m[1]));
        const data = Buffer.concat(numbers.map((n) => u.parts.get(n) ?? Buffer.alloc(0)));
        objects.set(u.key, data);
        uploads.delete(id);
        return send(res, 200, xml(`<CompleteMultipartUploadResult><Location>http://stand-in/${bucket}/${key}</Location><Bucket>${bucket}</Bucket><Key>${key}</Key><ETag>${etag(data)}</ETag></CompleteMultipartUploadResult>`));
      }
      if (method === 'DELETE' && q.has('uploadId')) {
        calls.push('DELETE abort-multipart');
        uploads.delete(q.get('uploadId') ?? '');
        return send(res, 204);
      }
      if (method === 'PUT') {
        calls.push('PUT object');
        objects.set(key, body);
        return send(res, 200, '', { etag: etag(body) });
      }
      if (method === 'GET') {
        calls.push(req.headers.range ? 'GET range' : 'GET object');
        const data = objects.get(key);
        if (!data) return error(res, 404, 'NoSuchKey');
        const m = /^bytes=(\d+)-(\d+)$/.exec(String(req.headers.range ?? ''));
        if (m) {
          const start = Number(m[1]);
          const end = Math.min(Number(m[2]), data.length - 1);
          res.writeHead(206, { 'content-length': String(end - start + 1), 'content-range': `bytes ${start}-${end}/${data.length}`, etag: etag(data) });
          return res.end(data.subarray(start, end + 1));
        }
        res.writeHead(200, { 'content-length': String(data.length), etag: etag(data) });
        return res.end(data);
      }
      if (method === 'DELETE') {
        calls.push('DELETE object');
        objects.delete(key);
        return send(res, 204);
      }
      return error(res, 405, 'MethodNotAllowed');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    bucket,
    accessKeyId,
    secretAccessKey,
    objects,
    calls,
    openUploads: () => uploads.size,
    stall: (on) => void (stalled = on),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
