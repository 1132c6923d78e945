/**
 * The performance table of bench/README.md: every bench's figures beside the baseline it
 * measured in the same run, and the ratio, read from the JSON line each bench prints last.
 * `npm run bench -- --table` runs the benches and rewrites the table between its markers.
 */

/** One figure of one bench: what was measured, against which baseline of the same run. */
export interface Figure {
  readonly bench: string;
  readonly backend: string;
  readonly measure: string;
  readonly figure: string;
  readonly baseline: string;
  /** figure ÷ baseline as the bench states it (× of time or of throughput, said in `ratioOf`). */
  readonly ratio: string;
}

type Json = Record<string, unknown>;

const num = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : Number.NaN);
const fmt = (n: number, digits = 1): string => (Number.isFinite(n) ? n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits }) : '—');
const x = (n: number): string => (Number.isFinite(n) ? `${n !== 0 && Math.abs(n) < 0.1 ? n.toPrecision(2) : n.toFixed(2)}×` : '—');
const ms = (n: number): string => `${fmt(n, n < 10 ? 2 : 1)} ms`;
const list = (v: unknown): Json[] => (Array.isArray(v) ? (v as Json[]) : []);
const str = (v: unknown, fallback = '—'): string => (typeof v === 'string' ? v : fallback);

/** The rows of one bench's JSON result; an unknown bench gives one row saying so. */
export function figuresOf(result: Json): Figure[] {
  const bench = str(result.bench, 'unknown');
  const backend = str(result.backend, '—');
  const row = (measure: string, figure: string, baseline: string, ratio: string): Figure => ({ bench, backend, measure, figure, baseline, ratio });
  switch (bench) {
    case 'auth-throughput':
    case 'visits-throughput':
    case 'rate-limit-overhead': {
      // The first row is the bare route of the same server: the baseline of every other.
      const [bare, ...rest] = list(result.results);
      if (!bare) return [];
      return rest.map((r) =>
        row(`${str(r.name)} req/s (p99)`, `${fmt(num(r.reqPerSec))} (${ms(num(r.p99Ms))})`, `bare route ${fmt(num(bare.reqPerSec))} (${ms(num(bare.p99Ms))})`, `${x(num(r.reqPerSecRatioToBare))} req/s`),
      );
    }
    case 'rest-floor':
      return list(result.results).map((r) => {
        const floor = (r.floor ?? {}) as Json;
        const project = (r.project ?? {}) as Json;
        return row(
          `${str(r.endpoint)} req/s (p99)`,
          `${fmt(num(project.reqPerSec))} (${ms(num(project.p99Ms))})`,
          `raw floor ${fmt(num(floor.reqPerSec))} (${ms(num(floor.p99Ms))})`,
          `${x(num(r.ratio))} req/s, ${x(num(r.p99Ratio))} p99`,
        );
      });
    case 'healthz-under-load': {
      // The baseline is /healthz on the same server, idle, in the same run.
      const idle = (result.idle ?? {}) as Json;
      return list(result.results).map((r) => {
        const h = (r.healthz ?? {}) as Json;
        return row(`/healthz p50 (p99) under ${str(r.target)}`, `${ms(num(h.p50Ms))} (${ms(num(h.p99Ms))})`, `idle ${ms(num(idle.p50Ms))} (${ms(num(idle.p99Ms))})`, `${x(num(r.ratio))} p99`);
      });
    }
    case 'sync-reconcile': {
      const results = list(result.results);
      const resultOf = (n: unknown, path: string) => results.find((r) => r.mutations === n && r.path === path);
      return results
        // The floor, the floor with the audit entries, and drizzle's VALUES kept for the record are baselines, not paths.
        .filter((r) => !str(r.path).startsWith('batched '))
        .map((r) => {
          // The floor with each mutation's audit entry: from 2026-12-05 (stop 59), absent in older results.
          const [floor, audited] = [resultOf(r.mutations, 'batched insert'), resultOf(r.mutations, 'batched insert + audit')];
          return row(
            `${fmt(num(r.mutations), 0)} queued mutations, ${str(r.path)} (mutations/s)`,
            `${ms(num(r.ms))} (${fmt(num(r.mutationsPerSec), 0)}/s)`,
            floor ? `one batched insert ${ms(num(floor.ms))}${audited ? `; with the audit entries ${ms(num(audited.ms))}` : ''}` : '—',
            `${x(num(r.timeRatioToBatchedInsert))} time${audited ? `; ${x(num(r.timeRatioToBatchedInsertWithAudit))} with the audit entries` : ''}`,
          );
        });
    }
    case 'sync-propagation': {
      const results = list(result.results);
      const floor = results.find((r) => r.path === 'floor');
      const write = results.find((r) => r.path === 'write→device');
      const ratios = (result.writeToDeviceVsFloor ?? {}) as Json;
      if (!floor || !write) return [];
      return [
        row(
          `write → device p50 / p99, ${fmt(num(result.idleDevices), 0)} idle devices`,
          `${ms(num(write.p50Ms))} / ${ms(num(write.p99Ms))}`,
          `NOTIFY + PK read + ws send ${ms(num(floor.p50Ms))} / ${ms(num(floor.p99Ms))}`,
          `${x(num(ratios.p50))} p50, ${x(num(ratios.p99))} p99`,
        ),
      ];
    }
    case 'sync-initial':
      return list(result.results)
        .filter((r) => r.path !== 'select')
        .map((r) => row(`${str(r.dataSet)} data set, ${str(r.path)} (${fmt(num(r.rows), 0)} rows)`, ms(num(r.ms)), 'plain select of the same rows', `${x(num(r.ratioToSelect))} time`));
    case 'sync-drafts':
      return list(result.results).map((r) =>
        row(`draft keystroke → other devices, ${str(r.server)} p50 / p99`, `${ms(num(r.p50Ms))} / ${ms(num(r.p99Ms))}`, 'Hocuspocus, same run', `${x(num(r.p50RatioToHocuspocus))} p50, ${x(num(r.p99RatioToHocuspocus))} p99`),
      );
    case 'ai-pipeline': {
      const raw = (result.raw_start_ms ?? {}) as Json;
      const app = (result.app_start_ms ?? {}) as Json;
      return [row('audio accepted → job started p50', ms(num(app.p50)), `raw add_job → pickup ${ms(num(raw.p50))}`, x(num(result.start_ratio_p50)))];
    }
    case 'audio-upload': {
      const rows = list(result.rows);
      const copy = rows.find((r) => r.name === 'copy');
      return rows
        .filter((r) => r.name !== 'copy')
        .map((r) => row(`${str(r.name)} ${fmt(num(result.fileMb), 0)} MB (MB/s)`, `${ms(num(r.bestMs))} (${fmt(num(r.mbPerSec))})`, copy ? `file copy ${ms(num(copy.bestMs))}` : '—', `${x(num(r.ratioToCopy))} throughput`));
    }
    case 'embedded-open': {
      // The first row is PGlite's own open of the same archive in the same run: the baseline of every other.
      const [base, ...rest] = list(result.results);
      if (!base) return [];
      const flags = result.liftoffOnly === true ? ', --liftoff-only' : '';
      return rest.map((r) =>
        row(`open from a ${fmt(num(result.archiveBytes) / 1e6)} MB archive, ${str(r.name)}${flags} (CPU)`, ms(num(r.cpuMs)), `PGlite.create, Blob ${ms(num(base.cpuMs))}`, `${x(num(r.cpuRatio))} CPU`),
      );
    }
    case 'audit-chain':
      return list(result.results).flatMap((r) => {
        const batch = (r.batch ?? null) as Json | null;
        return [
          { bench, backend: str(r.backend), measure: 'audited write p50 (hash chain on)', figure: ms(num(r.chainedMedianMs)), baseline: `chain trigger off ${ms(num(r.plainMedianMs))}`, ratio: `${x(num(r.medianRatio))} time` },
          ...(batch
            ? [
                {
                  bench,
                  backend: str(r.backend),
                  measure: `${fmt(num(batch.rows), 0)} audit rows of a sync set, audit_append (median)`,
                  figure: ms(num(batch.appendedMedianMs)),
                  baseline: `chained row by row by the trigger ${ms(num(batch.rowByRowMedianMs))}; chain off ${ms(num(batch.unchainedMedianMs))}`,
                  ratio: `${x(num(batch.ratioToRowByRow))} time (${x(num(batch.ratioToUnchained))} chain off)`,
                },
              ]
            : []),
        ];
      });
    case 'feed-visit-write':
      return list(result.results).flatMap((r) => {
        const inPlace = (r.inPlace ?? {}) as Json;
        const replaced = (r.replaced ?? {}) as Json;
        const baseline = `the visit re-placed (as before 0024): ${fmt(num(replaced.rowsPerWrite))} rows`;
        return [
          { bench, backend: str(r.backend), measure: 'timer event on a visit with a note → its devices, bytes per write', figure: `${fmt(num(inPlace.bytesPerWrite), 0)} B (${fmt(num(inPlace.rowsPerWrite))} rows)`, baseline: `${baseline}, ${fmt(num(replaced.bytesPerWrite), 0)} B`, ratio: `${x(num(r.bytesRatio))} bytes` },
          { bench, backend: str(r.backend), measure: 'timer event on a visit with a note → its devices, diff p50', figure: ms(num(inPlace.diffMedianMs)), baseline: `${baseline}, ${ms(num(replaced.diffMedianMs))}`, ratio: `${x(num(r.msRatio))} time` },
          { bench, backend: str(r.backend), measure: "timer event → the diff its sockets run: visits and timer_events alone, p50", figure: ms(num(((r.alone ?? {}) as Json).diffMedianMs)), baseline: `the full diff of the same write ${ms(num(inPlace.diffMedianMs))}`, ratio: `${x(num(r.aloneVsInPlaceMs))} time` },
        ];
      });
    case 'feed-diff-tables':
      return list(result.results).flatMap((r) => {
        const p50 = (key: string) => num(((r[key] ?? {}) as Json).p50Ms);
        const locks = (key: string) => {
          const l = ((r.relationLocks ?? {}) as Json)[key] as Json | undefined;
          return l ? `, ${fmt(num(l.fastPath) + num(l.shared), 0)} relation locks (${fmt(num(l.shared), 0)} beyond the fast path)` : '';
        };
        return [
          { bench, backend: str(r.backend), measure: "the full diff (every table) after a mileage write (p50)", figure: `${ms(p50('every table'))}${locks('every table')}`, baseline: `the changed row by its primary key ${ms(p50('pk read'))}`, ratio: `${x(num(r.everyTableVsPkRead))} time` },
          { bench, backend: str(r.backend), measure: "what a poke of visit_mileage reads: that table's diff alone (p50)", figure: `${ms(p50('mileage'))}${locks('mileage')}`, baseline: `every table ${ms(p50('every table'))}`, ratio: `${x(num(r.mileageVsEveryTable))} time` },
        ];
      });
    case 'route-solver': {
      const exact = (result.heldKarp12Ms ?? {}) as Json;
      const brute = (result.bruteForce9Ms ?? {}) as Json;
      return [row('exact route of 12 stops (median)', ms(num(exact.median)), `brute force, 9 stops ${ms(num(brute.median))}`, `${x(num(result.ratioBrute9ToHeldKarp12))} faster`)];
    }
    case 'load-day': {
      // A capacity run: its figures stand alone; the memory is compared with its own middle third.
      const sync = (result.sync ?? {}) as Json;
      return [
        row(`${fmt(num(result.clinicians), 0)} clinicians' day: req/s, errors, p50 / p99`, `${fmt(num(result.reqPerSec))} req/s, ${fmt(num(result.errorRate) * 100, 2)} % errors, ${ms(num(result.p50Ms))} / ${ms(num(result.p99Ms))}`, 'none (capacity of one node)', '—'),
        row('timer event REST write → device p50 / p99', `${ms(num(sync.timerDeliveryP50Ms))} / ${ms(num(sync.timerDeliveryP99Ms))}`, 'none (under the load above)', '—'),
        row('RSS of each process life (server, worker; a restart is a new life), last third vs middle third: the largest growth', `${fmt(num(result.rssGrowthLastThird) * 100, 1)} % growth`, 'the same life’s middle third', result.rssFlat === true ? 'flat' : result.rssFlat === false ? 'growing' : 'not judged'),
      ];
    }
    case 'device-cache':
      return list(result.results)
        .filter((r) => typeof r.sealedMs === 'number')
        .map((r) => row(`${str(r.name)}, AES-256-GCM device key`, ms(num(r.sealedMs)), `no encryption, same run ${ms(num(r.plainMs))}`, `${x(num(r.ratio))} time`));
    case 'app-cold-start': {
      const starts = list(result.results);
      const base = starts.find((r) => r.start === 'static list');
      const bundle = (result.bundle ?? {}) as Json;
      return [
        ...starts
          .filter((r) => r !== base)
          .map((r) => row(`field app to first visit list (${fmt(num(result.visitsListed), 0)} visits), ${str(r.start)}, median`, ms(num(r.medianMs)), `static page with the same list ${ms(num(base?.medianMs))}`, `${x(num(r.ratioToStatic))} time`)),
        row('field app JS + CSS, gzip (PGlite WASM and data apart)', `${fmt(num(bundle.gzipBytes) / 1024, 0)} KiB`, 'none (size)', '—'),
      ];
    }
    case 'ai-structurer':
      return list(result.rows).map((r) => row(`${str(r.name)} p50`, ms(num(r.p50_ms)), 'none (absolute; aim < 1 s per note)', '—'));
    default: {
      // A bench that follows the generic shape (results with a ratio) still lands in the table.
      const results = list(result.results).filter((r) => typeof r.ratio === 'number');
      if (results.length > 0) return results.map((r) => row(str(r.name ?? r.path ?? r.endpoint, 'result'), '—', '—', x(num(r.ratio))));
      return [row('(no table rows for this bench yet)', '—', '—', '—')];
    }
  }
}

/** Where a bench's figures come from: its run's date and the machine's load then. */
export function runOf(result: Json, date: string): string {
  const load = (result.loadAverage ?? {}) as Json;
  const at = [num(load.before), num(load.after)].filter(Number.isFinite);
  return at.length > 0 ? `${date}, load ${at.map((n) => n.toFixed(1)).join('→')}` : date;
}

const HEADER = '| bench | backend | measure | figure | baseline (same run) | ratio | run |';
const esc = (s: string) => s.replace(/\|/g, '\\|');
const line = (cells: readonly string[]) => `| ${cells.join(' | ')} |`;

/**
 * The rows of a table this module wrote, as cells (escaped as written), each with its bench
 * and backend. A table from before the run column gets `fallbackRun` as every row's run.
 */
export function tableRows(table: string, fallbackRun: string): Array<{ readonly key: string; readonly cells: readonly string[] }> {
  return table
    .split('\n')
    .filter((l) => l.startsWith('| ') && !l.startsWith('| bench |'))
    .map((l) => {
      const cells = l
        .slice(2, -2)
        .split(/ (?<!\\)\| /);
      return { key: `${cells[0]}\u0000${cells[1]}`, cells: cells.length === 6 ? [...cells, fallbackRun] : cells };
    });
}

/**
 * The markdown table of the benches' figures. `previous` (the table as it stands): the rows of
 * every bench and backend this run did not measure are kept as they are, with their own run,
 * so a filtered run (`npm run bench -- rest-floor --table`) refreshes its own rows only.
 */
export function performanceTable(results: readonly Json[], machine: string, opts: { date?: string; previous?: string } = {}): string {
  const date = opts.date ?? new Date().toISOString().slice(0, 10);
  const fresh = results.flatMap((result) => {
    const run = runOf(result, date);
    return figuresOf(result).map((r) => ({ key: `${esc(r.bench)}\u0000${esc(r.backend)}`, cells: [r.bench, r.backend, r.measure, r.figure, r.baseline, r.ratio, run].map(esc) }));
  });
  const measured = new Set(fresh.map((r) => r.key));
  // A table from before the run column names its one run in its first line.
  const oldRun = /\(([^()]*?), load average ([\d.]+) at the end, (\d{4}-\d{2}-\d{2})/.exec(opts.previous ?? '');
  const kept = opts.previous ? tableRows(opts.previous, oldRun ? `${oldRun[3]}, load ${oldRun[2]}` : '—').filter((r) => !measured.has(r.key)) : [];
  const rows = [...kept, ...fresh].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  return [
    `Regenerated by \`npm run bench -- --table\`; \`npm run bench -- <name> --table\` refreshes that bench's rows and keeps the others (last run: ${machine}). Each ratio compares two figures measured in the same run; the run column says when, and how loaded the machine was.`,
    '',
    HEADER,
    '|---|---|---|---|---|---|---|',
    ...rows.map((r) => line(r.cells)),
  ].join('\n');
}

export const TABLE_START = '<!-- performance-table:start -->';
export const TABLE_END = '<!-- performance-table:end -->';

/** `readme` with the block between the markers replaced (appended with its markers if absent). */
export function withTable(readme: string, table: string): string {
  const block = `${TABLE_START}\n${table}\n${TABLE_END}`;
  const start = readme.indexOf(TABLE_START);
  const end = readme.indexOf(TABLE_END);
  if (start === -1 || end === -1 || end < start) return `${readme.trimEnd()}\n\n## The performance table\n\n${block}\n`;
  return `${readme.slice(0, start)}${block}${readme.slice(end + TABLE_END.length)}`;
}

/** The table between the markers of `readme`, or null. */
export function currentTable(readme: string): string | null {
  const start = readme.indexOf(TABLE_START);
  const end = readme.indexOf(TABLE_END);
  return start === -1 || end < start ? null : readme.slice(start + TABLE_START.length, end);
}
