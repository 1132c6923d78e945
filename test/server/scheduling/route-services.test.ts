/**
 * The outside services of route optimisation, reached through their real protocols: a
 * Distance Matrix (live traffic) stand-in, an OSRM-compatible `table` stand-in and a
 * Nominatim-compatible `search` stand-in on 127.0.0.1. Live traffic comes first; when it fails
 * OSRM's answer decides the order, and when that fails great-circle estimates do (said so); Nominatim places addresses (with a User-Agent), is asked once per address (the cache,
 * which holds no address), and a miss falls back to the ZIP centroid.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { geocodeCache } from '@fieldchart/schema/db';
import { operationContext, runOperation } from '@fieldchart/server';
import { forEachBackend } from '../../helpers/backends.ts';
import { startTestServer, type TestServer } from '../../helpers/test-server.ts';
import { schedule, utcClinician } from './route-fixtures.ts';

/** Four addresses the stand-in geocoder knows, each at its own point (latitudes tell them apart). */
const KNOWN: Record<string, { lat: number; lon: number }> = {
  '11 Alpha Rd, Columbus, OH 43215': { lat: 39.91, lon: -83.01 },
  '22 Bravo Rd, Columbus, OH 43215': { lat: 39.92, lon: -83.02 },
  '33 Charlie Rd, Columbus, OH 43215': { lat: 39.93, lon: -83.03 },
  '44 Delta Rd, Columbus, OH 43215': { lat: 39.94, lon: -83.04 },
};
const NAMES = Object.keys(KNOWN);

interface StandIn {
  readonly url: string;
  osrmMode: 'ok' | 'fail';
  trafficMode: 'ok' | 'fail';
  readonly trafficRequests: URLSearchParams[];
  readonly searches: Array<{ q: string; format: string | null; userAgent: string | undefined }>;
  readonly tables: string[];
  close(): Promise<void>;
}

/**
 * OSRM: 10 minutes between any two points except along the chain D → B → A → C (1 minute each),
 * so the only 3-minute route is that chain — far from what straight lines suggest.
 */
const CHAIN = [3, 1, 0, 2];
/** Live traffic: 2 minutes along C → A → D → B, 15 elsewhere; without traffic every leg would be 1 minute. */
const TRAFFIC_CHAIN = [2, 0, 3, 1];

const labelOf = (lat: number, lon: number) => NAMES.findIndex((n) => Math.abs(KNOWN[n]!.lat - lat) < 1e-6 && Math.abs(KNOWN[n]!.lon - lon) < 1e-6);
const next = (chain: number[], a: number, b: number) => {
  const i = chain.indexOf(a);
  return i >= 0 && chain[i + 1] === b;
};

async function startStandIn(): Promise<StandIn> {
  const searches: StandIn['searches'] = [];
  const tables: string[] = [];
  const trafficRequests: URLSearchParams[] = [];
  const state = { osrmMode: 'ok' as 'ok' | 'fail', trafficMode: 'fail' as 'ok' | 'fail' };
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (url.pathname === '/search') {
      const q = url.searchParams.get('q') ?? '';
      searches.push({ q, format: url.searchParams.get('format'), userAgent: req.headers['user-agent'] });
      const hit = KNOWN[q];
      return send(200, hit ? [{ place_id: 1, lat: String(hit.lat), lon: String(hit.lon), display_name: 'somewhere' }] : []);
    }
    if (url.pathname === '/maps/api/distancematrix/json') {
      trafficRequests.push(url.searchParams);
      if (state.trafficMode === 'fail') return send(200, { status: 'OVER_QUERY_LIMIT', rows: [] });
      if (url.searchParams.get('key') !== 'test-key') return send(200, { status: 'REQUEST_DENIED', rows: [] });
      const parse = (v: string | null) => (v ?? '').split('|').map((p) => p.split(',').map(Number) as [number, number]);
      const origins = parse(url.searchParams.get('origins')).map(([lat, lon]) => labelOf(lat, lon));
      const destinations = parse(url.searchParams.get('destinations')).map(([lat, lon]) => labelOf(lat, lon));
      return send(200, {
        status: 'OK',
        rows: origins.map((a) => ({
          elements: destinations.map((b) => ({
            status: 'OK',
            duration: { value: 60 },
            duration_in_traffic: { value: a === b ? 0 : next(TRAFFIC_CHAIN, a, b) ? 120 : 900 },
            distance: { value: 1000 },
          })),
        })),
      });
    }
    const m = /^\/table\/v1\/driving\/(.+)$/.exec(url.pathname);
    if (m) {
      tables.push(`${url.pathname}${url.search}`);
      if (state.osrmMode === 'fail') return send(503, { code: 'Busy' });
      if (url.searchParams.get('annotations') !== 'duration,distance') return send(400, { code: 'InvalidOptions' });
      const points = m[1]!.split(';').map((p) => p.split(',').map(Number) as [number, number]);
      // Which known place is each point (lon,lat order)?
      const label = points.map(([lon, lat]) => labelOf(lat, lon));
      const durations = label.map((a) => label.map((b) => (a === b ? 0 : next(CHAIN, a, b) ? 60 : 600)));
      return send(200, { code: 'Ok', durations, distances: durations.map((row) => row.map((s) => s * 10)) });
    }
    send(404, { code: 'NotFound' });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    get osrmMode() {
      return state.osrmMode;
    },
    set osrmMode(v) {
      state.osrmMode = v;
    },
    get trafficMode() {
      return state.trafficMode;
    },
    set trafficMode(v) {
      state.trafficMode = v;
    },
    trafficRequests,
    searches,
    tables,
    close: () => new Promise((r) => server.close(() => r())),
  };
}

forEachBackend('scheduling: live-traffic, OSRM and Nominatim stand-ins', (backend) => {
  let server: TestServer;
  let standIn: StandIn;
  before(async () => {
    standIn = await startStandIn();
    server = await startTestServer(backend, {
      env: {
        ROUTING_OSRM_URL: standIn.url,
        GEOCODER_NOMINATIM_URL: standIn.url,
        GEOCODER_USER_AGENT: 'Fieldchart-test/1 (ops@fieldchart.test)',
        GEOCODER_MIN_INTERVAL_MS: '0',
        GOOGLE_DISTANCE_MATRIX_KEY: 'test-key',
        GOOGLE_DISTANCE_MATRIX_URL: `${standIn.url}/maps/api/distancematrix/json`,
        GOOGLE_DISTANCE_MATRIX_MAX_ELEMENTS: '10',
      },
    });
  });
  after(async () => {
    await server.close();
    await standIn.close();
  });

  test('OSRM decides the order; Nominatim places the addresses once (cached without the address); a miss uses the ZIP centroid', async () => {
    const u = await utcClinician(server);
    const date = '2026-12-10';
    const ids: string[] = [];
    for (const [i, address] of NAMES.entries()) ids.push(await schedule(server, u, { visit_date: date, start_time: `1${i}:00`, address, duration_minutes: 30 }));
    // Unknown to the geocoder, but its ZIP places it; a fifth visit makes OSRM's table 5×5.
    const zipOnly = await schedule(server, u, { visit_date: '2026-12-11', start_time: '09:00', address: '99 Nowhere Ln, Columbus, OH 43211' });

    const res = await server.api('POST', '/scheduling/optimize', { token: u.token, body: { date } });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const d = res.body.data;
    assert.equal(d.routing_source, 'osrm', 'live traffic failed (the stand-in starts failing): OSRM answered');
    assert.match(res.body.message, /live traffic.*OSRM/);
    assert.deepEqual(d.visits.map((v: { schedule_uuid: string }) => v.schedule_uuid), CHAIN.map((i) => ids[i]));
    assert.equal(d.total_drive_minutes, 3);
    assert.equal(d.total_miles, Math.round(((3 * 600) / 1609.344) * 100) / 100, 'miles from OSRM distances (metres)');
    assert.deepEqual(d.visits.map((v: { drive_minutes: number }) => v.drive_minutes), [0, 1, 1, 1]);
    assert.deepEqual(d.visits.map((v: { suggested_start_time: string }) => v.suggested_start_time), ['08:00', '08:41', '09:22', '10:03']);
    // The current order A,B,C,D costs 10 + 10 + 10 minutes.
    assert.deepEqual(d.savings.minutes, 27);
    assert.match(standIn.tables[0]!, /^\/table\/v1\/driving\/-83\.010000,39\.910000;-83\.020000,39\.920000;/, 'lon,lat pairs in the current order');

    assert.equal(standIn.searches.length, 4);
    for (const s of standIn.searches) {
      assert.equal(s.format, 'jsonv2');
      assert.equal(s.userAgent, 'Fieldchart-test/1 (ops@fieldchart.test)');
    }
    const again = await server.api('POST', '/scheduling/optimize', { token: u.token, body: { date } });
    assert.deepEqual(again.body.data, d);
    assert.equal(standIn.searches.length, 4, 'cached: the geocoder is not asked again');
    const cache = await server.db.database.db.select().from(geocodeCache);
    assert.ok(cache.length >= 4);
    const dump = JSON.stringify(cache);
    assert.ok(!/Alpha|Bravo|Charlie|Delta|columbus/i.test(dump), 'no address in the cache');
    assert.ok(!dump.includes('39.91'), 'no coordinates in the clear');
    // Key rotation rotates the index key too: the cache's keys are lookup tokens under the old
    // one, so its entries are dropped (nothing could find them again) and each address is asked
    // once more, then cached under the new key, its point sealed under the new PHI key.
    const rotated = (await runOperation(operationContext(server.runtime.services, server.runtime.database), 'keys.rotate', {})) as {
      key_id: string;
      index_key_id: string;
      failed: number;
      geocode_cache_dropped: number;
    };
    assert.equal(rotated.failed, 0);
    assert.equal(rotated.geocode_cache_dropped, cache.length);
    assert.equal((await server.db.database.db.select().from(geocodeCache)).length, 0);
    assert.deepEqual((await server.api('POST', '/scheduling/optimize', { token: u.token, body: { date } })).body.data, d);
    assert.equal(standIn.searches.length, 8, 'each address asked once more after the rotation');
    const recached = await server.db.database.db.select().from(geocodeCache);
    assert.equal(recached.length, cache.length);
    for (const row of recached) {
      assert.equal(row.indexKeyId, rotated.index_key_id);
      if (row.pointEnc) assert.ok(row.pointEnc.startsWith(`fc1.${rotated.key_id}.`), 'cached again under the new keys');
    }
    assert.deepEqual((await server.api('POST', '/scheduling/optimize', { token: u.token, body: { date } })).body.data, d);
    assert.equal(standIn.searches.length, 8, 'cached again');

    // The ZIP-only visit joins a day; the geocoder's miss falls back to the 43211 centroid.
    for (const [i, address] of NAMES.slice(0, 2).entries()) await schedule(server, u, { visit_date: '2026-12-11', start_time: `1${i}:00`, address });
    standIn.osrmMode = 'fail';
    const fallback = await server.api('POST', '/scheduling/optimize', { token: u.token, body: { date: '2026-12-11' } });
    assert.equal(fallback.status, 200, JSON.stringify(fallback.body));
    assert.equal(fallback.body.data.routing_source, 'great_circle', 'OSRM failed: great-circle estimates');
    assert.match(fallback.body.message, /great-circle/);
    assert.deepEqual(fallback.body.data.unrouted, []);
    assert.ok(fallback.body.data.visits.some((v: { schedule_uuid: string }) => v.schedule_uuid === zipOnly));
    assert.ok(standIn.searches.some((s) => s.q.startsWith('99 Nowhere')), 'the geocoder was asked first');
    standIn.osrmMode = 'ok';
  });

  test('live traffic (Distance Matrix protocol) comes first: duration_in_traffic decides, departure at day_start, requests within the element limit', async () => {
    const u = await utcClinician(server);
    const date = '2031-01-15'; // in the future, so departure_time is the day's start, not now
    const ids: string[] = [];
    for (const [i, address] of NAMES.entries()) ids.push(await schedule(server, u, { visit_date: date, start_time: `1${i}:00`, address, duration_minutes: 30 }));
    standIn.trafficMode = 'ok';
    const mark = standIn.trafficRequests.length;
    try {
      const res = await server.api('POST', '/scheduling/optimize', { token: u.token, body: { date } });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(res.body.message, 'Route suggestion');
      const d = res.body.data;
      assert.equal(d.routing_source, 'google_traffic');
      assert.deepEqual(d.visits.map((v: { schedule_uuid: string }) => v.schedule_uuid), TRAFFIC_CHAIN.map((i) => ids[i]));
      assert.equal(d.total_drive_minutes, 6, 'duration_in_traffic, not duration');
      const sent = standIn.trafficRequests.slice(mark);
      assert.equal(sent.length, 2, '4 × 4 elements with at most 10 per request: two requests of 2 origins');
      for (const q of sent) {
        assert.equal(q.get('departure_time'), String(Date.UTC(2031, 0, 15, 8, 0) / 1000), 'the day starts 08:00 in the clinician’s zone (UTC)');
        assert.equal(q.get('traffic_model'), 'best_guess');
        assert.equal(q.get('destinations')?.split('|').length, 4);
      }
    } finally {
      standIn.trafficMode = 'fail';
    }
  });
});
