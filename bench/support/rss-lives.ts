/**
 * Memory over a load run, judged per process life. A `kill -9` and restart starts a process's
 * memory over, so a run's thirds only compare within one pid: each life long enough to have a
 * warm-up, a middle and an end is judged on its own, its last third's median RSS against its
 * middle third's (the first third is caches, JIT and pools filling). What is judged is growth, a
 * leak's sign: a life whose memory falls back after a burst (a restarted server taking 200
 * devices' reconnections at once) is flat.
 */

export interface RssSample {
  /** Which node: 'server', 'worker'. */
  node: string;
  pid: number;
  atSeconds: number;
  mib: number;
}

export interface RssLife {
  node: string;
  pid: number;
  fromSeconds: number;
  toSeconds: number;
  samples: number;
  middleMiB: number;
  lastMiB: number;
  /** last third's median / middle third's − 1; NaN when the life is too short to judge. */
  growth: number;
  /** null: shorter than the judged span, or too few samples in a third. */
  flat: boolean | null;
}

export interface RssJudgement {
  lives: RssLife[];
  /** Every judged life flat; null when no life was long enough to judge. */
  flat: boolean | null;
}

function median(xs: number[]): number {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}

export function judgeRss(samples: readonly RssSample[], options: { minSeconds?: number; tolerance?: number } = {}): RssJudgement {
  const minSeconds = options.minSeconds ?? 60;
  const tolerance = options.tolerance ?? 0.1;
  const byLife = new Map<string, RssSample[]>();
  for (const s of samples) {
    if (!Number.isFinite(s.mib)) continue; // between a kill and the restart there is nothing to read
    const key = `${s.node}:${s.pid}`;
    byLife.set(key, [...(byLife.get(key) ?? []), s]);
  }
  const lives = [...byLife.values()].map((xs): RssLife => {
    const first = xs[0] as RssSample;
    const from = first.atSeconds;
    const to = (xs[xs.length - 1] as RssSample).atSeconds;
    const span = to - from;
    const third = (k: number) => xs.filter((s) => s.atSeconds >= from + (k * span) / 3 && s.atSeconds <= from + ((k + 1) * span) / 3).map((s) => s.mib);
    const middle = third(1);
    const last = third(2);
    const judged = span >= minSeconds && middle.length >= 2 && last.length >= 2;
    const growth = judged ? median(last) / median(middle) - 1 : Number.NaN;
    return {
      node: first.node,
      pid: first.pid,
      fromSeconds: from,
      toSeconds: to,
      samples: xs.length,
      middleMiB: median(middle),
      lastMiB: median(last),
      growth,
      flat: judged ? growth <= tolerance : null,
    };
  });
  const judged = lives.filter((l) => l.flat !== null);
  return { lives, flat: judged.length === 0 ? null : judged.every((l) => l.flat === true) };
}
