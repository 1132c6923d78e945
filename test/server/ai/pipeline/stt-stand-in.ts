/**
 * A local stand-in of the OpenAI-compatible `POST /v1/audio/transcriptions` protocol on
 * 127.0.0.1: it parses the multipart request like the real service (Web `Request.formData`),
 * records what it received, and answers as the test scripts it (verbose_json, an error status,
 * malformed output, a delay). Shared by the STT client tests, the pipeline tests and the bench.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedRequest {
  readonly path: string;
  readonly authorization: string | undefined;
  readonly contentType: string | undefined;
  readonly fields: Record<string, string[]>;
  readonly file: { readonly name: string; readonly type: string; readonly bytes: number; readonly head: Buffer } | null;
}

export type Answer =
  | { readonly status: number; readonly json?: unknown; readonly text?: string; readonly delayMs?: number }
  | ((req: ReceivedRequest) => Promise<{ status: number; json?: unknown; text?: string; delayMs?: number }> | { status: number; json?: unknown; text?: string; delayMs?: number });

export interface SttStandIn {
  readonly url: string;
  readonly requests: ReceivedRequest[];
  /** Answers taken in order; the last one repeats. */
  script(...answers: Answer[]): void;
  close(): Promise<void>;
}

export const verboseJson = (segments: { start: number; end: number; text: string }[]) => ({
  task: 'transcribe',
  language: 'english',
  duration: segments.at(-1)?.end ?? 0,
  text: segments.map((s) => s.text.trim()).join(' '),
  segments: segments.map((s, id) => ({ id, seek: 0, start: s.start, end: s.end, text: s.text, tokens: [], temperature: 0, avg_logprob: -0.2, compression_ratio: 1.2, no_speech_prob: 0.01 })),
});

export async function startSttStandIn(): Promise<SttStandIn> {
  const requests: ReceivedRequest[] = [];
  let answers: Answer[] = [{ status: 200, json: verboseJson([{ start: 0, end: 1, text: 'Hello.' }]) }];
  let served = 0;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void (async () => {
        const body = Buffer.concat(chunks);
        const fields: Record<string, string[]> = {};
        let file: ReceivedRequest['file'] = null;
        try {
          const form = await new Request('http://stand-in/', { method: 'POST', body, headers: { 'content-type': req.headers['content-type'] ?? '' } }).formData();
          // (the project's lib typings lack FormData's iterator; Node has it)
          for (const [k, v] of (form as unknown as { entries(): IterableIterator<[string, string | File]> }).entries()) {
            if (typeof v === 'string') (fields[k] ??= []).push(v);
            else {
              const bytes = Buffer.from(await v.arrayBuffer());
              file = { name: v.name, type: v.type, bytes: bytes.length, head: bytes.subarray(0, 12) };
            }
          }
        } catch {
          // Not multipart: recorded with no fields; the test decides what that means.
        }
        const received: ReceivedRequest = { path: req.url ?? '', authorization: req.headers.authorization, contentType: req.headers['content-type'], fields, file };
        requests.push(received);
        const a = answers[Math.min(served, answers.length - 1)] as Answer;
        served++;
        const answer = typeof a === 'function' ? await a(received) : a;
        if (answer.delayMs) await new Promise((r) => setTimeout(r, answer.delayMs));
        if (res.destroyed) return;
        const payload = answer.text ?? JSON.stringify(answer.json ?? {});
        res.writeHead(answer.status, { 'content-type': answer.text !== undefined ? 'text/plain' : 'application/json' });
        res.end(payload);
      })();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    script(...next: Answer[]) {
      answers = next;
      served = 0;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * A stand-in that answers every request with one short dictation after `ms`, as a remote
 * service would, and counts the requests it holds (a fault can be timed into a job's call).
 */
export async function startTimedSttStandIn(ms: number): Promise<{ readonly stt: SttStandIn; inFlight(): number }> {
  const stt = await startSttStandIn();
  let inFlight = 0;
  stt.script(async () => {
    inFlight++;
    await new Promise((r) => setTimeout(r, ms));
    inFlight--;
    return { status: 200, json: verboseJson([{ start: 0, end: 2, text: 'Patient walked fifty feet with a walker.' }]) };
  });
  return { stt, inFlight: () => inFlight };
}
