/**
 * Where the time went in a .cpuprofile written by a sync bench (BENCH_CPU_PROF=<dir>) or by
 * node --cpu-prof: self time by package or source file, and by function.
 *
 *   node --import tsx bench/support/sync-profile-summary.ts <file.cpuprofile> [top=20]
 *
 * "(idle)" is the event loop waiting — on a database round trip, for the most part, in a
 * server under a closed-loop load; "writeBuffer"/"writev" are socket writes (one per query
 * or frame).
 */
import fs from 'node:fs';

interface ProfileNode {
  readonly id: number;
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number };
}
interface Profile {
  readonly nodes: readonly ProfileNode[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

const [file, topArg] = process.argv.slice(2);
if (!file) {
  console.error('usage: sync-profile-summary.ts <file.cpuprofile> [top]');
  process.exit(2);
}
const top = Number(topArg ?? 20);
const profile = JSON.parse(fs.readFileSync(file, 'utf8')) as Profile;
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const selfUs = new Map<number, number>();
profile.samples.forEach((id, i) => selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
const total = [...selfUs.values()].reduce((a, b) => a + b, 0);

const shorten = (url: string) => url.replace(/^file:\/\//, '').replace(/.*node_modules\//, 'npm:').replace(/.*\/(bench|server|schema|client-lib)\//, '$1/');
const where = (url: string, name: string) => {
  if (!url) return name || '(native)';
  const s = shorten(url);
  if (!s.startsWith('npm:')) return s;
  const [scope = '', pkg = ''] = s.slice(4).split('/');
  return `npm:${scope.startsWith('@') ? `${scope}/${pkg}` : scope}`;
};
const byPlace = new Map<string, number>();
const byFunction = new Map<string, number>();
for (const [id, us] of selfUs) {
  const cf = byId.get(id)?.callFrame;
  if (!cf) continue;
  const place = where(cf.url, cf.functionName);
  byPlace.set(place, (byPlace.get(place) ?? 0) + us);
  const fn = `${cf.functionName || '(anonymous)'}  ${cf.url ? `${shorten(cf.url)}:${cf.lineNumber + 1}` : ''}`;
  byFunction.set(fn, (byFunction.get(fn) ?? 0) + us);
}
const show = (title: string, m: Map<string, number>) => {
  console.log(`\n${title}`);
  for (const [k, us] of [...m].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    console.log(`${(us / 1000).toFixed(0).padStart(8)} ms ${((100 * us) / total).toFixed(1).padStart(5)}%  ${k}`);
  }
};
console.log(`${file}: ${(total / 1e6).toFixed(2)} s sampled`);
show('self time by package / file', byPlace);
show('self time by function', byFunction);
