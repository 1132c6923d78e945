/**
 * The exact order of a day's visits that minimises total drive cost: Held–Karp dynamic
 * programming over subsets, O(2^n · n²) time and O(2^n · n) memory — about 0.6 million steps
 * for the 12 visits the API accepts, where trying every order would be 479 million.
 *
 * Pure: no clock, no I/O. The server (POST /scheduling/optimize) and the offline client
 * (planDay) both call it, so a plan made on the device is the one the server would make from
 * the same matrix.
 */

/** What a route costs: `cost[i][j]` from stop i to stop j; `start[j]`/`end[j]` the legs from/to the home base. */
export interface RouteProblem {
  /** Square matrix over the visits (n ≤ MAX_EXACT_VISITS). */
  readonly cost: ReadonlyArray<ReadonlyArray<number>>;
  /** Cost of reaching visit j first (from the home base); omitted: 0 (the day starts at the first visit). */
  readonly start?: ReadonlyArray<number> | undefined;
  /** Cost of going home after visit j last; omitted: 0 (the day ends at the last visit). */
  readonly end?: ReadonlyArray<number> | undefined;
  /** A visit that must come first (lock_first). */
  readonly first?: number | undefined;
}

export interface RouteSolution {
  /** Visit indices in driving order. */
  readonly order: number[];
  /** start + legs + end of that order. */
  readonly cost: number;
}

/** The largest day solved exactly (the spec's limit): 2^12 · 12 states, a few milliseconds. */
export const MAX_EXACT_VISITS = 12;

/** The cost of one given order under the problem's start/end legs. */
export function routeCost(p: RouteProblem, order: readonly number[]): number {
  if (order.length === 0) return 0;
  let total = p.start?.[order[0]!] ?? 0;
  for (let k = 1; k < order.length; k++) total += p.cost[order[k - 1]!]![order[k]!]!;
  total += p.end?.[order[order.length - 1]!] ?? 0;
  return total;
}

function check(p: RouteProblem): number {
  const n = p.cost.length;
  if (n > MAX_EXACT_VISITS) throw new RangeError(`at most ${MAX_EXACT_VISITS} visits can be solved exactly, got ${n}`);
  for (const row of p.cost) if (row.length !== n) throw new RangeError('cost must be a square matrix');
  if (p.start && p.start.length !== n) throw new RangeError('start must have one entry per visit');
  if (p.end && p.end.length !== n) throw new RangeError('end must have one entry per visit');
  if (p.first !== undefined && (!Number.isInteger(p.first) || p.first < 0 || p.first >= n)) throw new RangeError('first must index a visit');
  return n;
}

/**
 * The optimum. Ties are broken deterministically (only a strictly cheaper path replaces a
 * stored one, states visited in index order), so the same input always gives the same plan on
 * server and device.
 */
export function solveRoute(p: RouteProblem): RouteSolution {
  const n = check(p);
  if (n === 0) return { order: [], cost: 0 };
  const full = (1 << n) - 1;
  // best[mask * n + j]: cheapest way to visit exactly `mask`, ending at j; Float64Array keeps it flat and fast.
  const best = new Float64Array((full + 1) * n).fill(Infinity);
  const prev = new Int8Array((full + 1) * n).fill(-1);
  for (let j = 0; j < n; j++) {
    if (p.first !== undefined && j !== p.first) continue;
    best[(1 << j) * n + j] = p.start?.[j] ?? 0;
  }
  // The matrix flattened once: the inner loop then reads one typed array, not nested arrays.
  const cost = new Float64Array(n * n);
  for (let i = 0; i < n; i++) for (let k = 0; k < n; k++) cost[i * n + k] = p.cost[i]![k]!;
  for (let mask = 1; mask <= full; mask++) {
    const base = mask * n;
    for (let j = 0; j < n; j++) {
      if (!(mask & (1 << j))) continue;
      const here = best[base + j]!;
      if (here === Infinity) continue;
      const row = j * n;
      for (let k = 0; k < n; k++) {
        const bit = 1 << k;
        if (mask & bit) continue;
        const c = here + cost[row + k]!;
        const at = (mask | bit) * n + k;
        if (c < best[at]!) {
          best[at] = c;
          prev[at] = j;
        }
      }
    }
  }
  let bestEnd = -1;
  let bestCost = Infinity;
  for (let j = 0; j < n; j++) {
    const c = best[full * n + j]! + (p.end?.[j] ?? 0);
    if (c < bestCost) {
      bestCost = c;
      bestEnd = j;
    }
  }
  if (bestEnd < 0) throw new RangeError('no finite route: a cost is infinite or NaN');
  const order: number[] = [];
  let mask = full;
  let j = bestEnd;
  while (j >= 0) {
    order.push(j);
    const pj = prev[mask * n + j]!;
    mask &= ~(1 << j);
    j = pj;
  }
  order.reverse();
  return { order, cost: bestCost };
}

/**
 * Every order tried: the reference the tests and the bench hold the solver against. n! orders,
 * so only for small n (9 visits = 362,880 orders).
 */
export function bruteForceRoute(p: RouteProblem): RouteSolution {
  const n = p.cost.length;
  if (n > 10) throw new RangeError('brute force is for at most 10 visits');
  if (n === 0) return { order: [], cost: 0 };
  const order = Array.from({ length: n }, (_, i) => i);
  let best: number[] = [];
  let bestCost = Infinity;
  const used = new Array<boolean>(n).fill(false);
  const path: number[] = [];
  const visit = (acc: number) => {
    if (path.length === n) {
      const total = acc + (p.end?.[path[n - 1]!] ?? 0);
      if (total < bestCost) {
        bestCost = total;
        best = [...path];
      }
      return;
    }
    for (const k of order) {
      if (used[k]) continue;
      if (path.length === 0 && p.first !== undefined && k !== p.first) continue;
      const leg = path.length === 0 ? (p.start?.[k] ?? 0) : p.cost[path[path.length - 1]!]![k]!;
      used[k] = true;
      path.push(k);
      visit(acc + leg);
      path.pop();
      used[k] = false;
    }
  };
  visit(0);
  return { order: best, cost: bestCost };
}
