/**
 * The server of bench/audio-upload.ts, in a process of its own (the load generator must not
 * share its heap or event loop, and its RSS is what is measured): a real Fieldchart server
 * (test/helpers/test-server.ts, PGlite or BENCH_DATABASE_URL) with the upload cap raised to
 * take the 100 MB file on POST /visit-audio-upload, one clinician and one visit.
 *
 * Protocol (IPC): sends `{ ready: AudioServers }`; on `'sample-start'` it starts sampling its
 * RSS every 10 ms, on `'sample-stop'` answers `{ rss: RssSample }`; on `'stop'` it exits.
 */
import { startServerPair } from './server-pair.ts';

export interface AudioServers {
  readonly backend: 'pglite' | 'postgres';
  readonly apiOrigin: string;
  readonly apiPrefix: string;
  readonly token: string;
  readonly visit: string;
  readonly maxBytes: number;
}

export interface RssSample {
  readonly before: number;
  readonly peak: number;
  readonly samples: number;
  /** CPU time (user + system) the server process spent meanwhile, in ms. */
  readonly cpuMs: number;
}

if (!process.send) throw new Error('audio-servers runs as a child process of a bench script');

const MAX = 110 * 1024 * 1024;
const { backend, server, stop } = await startServerPair({ env: { VISIT_AUDIO_MAX_BYTES: String(MAX), AI_AUDIO_MAX_BYTES: String(MAX) } });
const { API, registerUser } = await import('../../test/helpers/test-server.ts');
const user = await registerUser(server);
const visit = await server.api('POST', '/schedule-visit-request-save', {
  token: user.token,
  body: { visit_date: '2026-11-23', start_time: '09:30', address: '5 Elm St' },
});
if (visit.status !== 200) throw new Error(`schedule failed: ${visit.status}`);

let timer: NodeJS.Timeout | null = null;
let sample = { before: 0, peak: 0, samples: 0 };
let cpu = process.cpuUsage();
process.on('message', (m) => {
  if (m === 'sample-start') {
    global.gc?.();
    const rss = process.memoryUsage().rss;
    sample = { before: rss, peak: rss, samples: 0 };
    cpu = process.cpuUsage();
    timer = setInterval(() => {
      sample.peak = Math.max(sample.peak, process.memoryUsage().rss);
      sample.samples++;
    }, 10);
  } else if (m === 'sample-stop') {
    if (timer) clearInterval(timer);
    const used = process.cpuUsage(cpu);
    process.send?.({ rss: { ...sample, cpuMs: Math.round((used.user + used.system) / 1000) } satisfies RssSample });
  }
});

const ready: AudioServers = { backend, apiOrigin: server.url, apiPrefix: API, token: user.token, visit: visit.body.data.uuid as string, maxBytes: MAX };
process.send({ ready });
void stop;
