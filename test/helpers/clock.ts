import type { Clock } from '@fieldchart/server';

/** A clock that tests move forward instead of sleeping. Starts at the real time. */
export function manualClock(start = new Date()): Clock & { advance(seconds: number): void; set(d: Date): void } {
  let now = start.getTime();
  return {
    now: () => new Date(now),
    advance(seconds) {
      now += seconds * 1000;
    },
    set(d) {
      now = d.getTime();
    },
  };
}
