import cliProgress from 'cli-progress';
import type { Progress, ProgressEvent } from '@fieldchart/server';

/**
 * Progress of a long command, on stderr so stdout stays the result (and `--json` stays clean).
 * On a terminal: a bar per step, redrawn in place. Otherwise (a pipe, a log file, CI): plain
 * lines, one when a step starts, at each further tenth of it, and when it ends — a log of a
 * million-row re-encryption stays a few dozen lines.
 */
export interface ProgressReporter {
  readonly progress: Progress;
  /** Ends the bar of the step in progress (the last event may not have reached 100%). */
  stop(): void;
}

export function progressReporter(label: string, stream: NodeJS.WriteStream = process.stderr): ProgressReporter {
  return stream.isTTY ? barReporter(label, stream) : lineReporter(label, stream);
}

function lineReporter(label: string, stream: NodeJS.WritableStream): ProgressReporter {
  let step: string | null = null;
  let lastTenth = -1;
  const line = (e: ProgressEvent) => {
    const of = e.total === null ? '' : `/${e.total}`;
    const pct = e.total ? ` (${Math.floor((100 * e.done) / e.total)}%)` : '';
    stream.write(`${label}: ${e.step} ${e.done}${of}${pct}\n`);
  };
  return {
    progress(e) {
      // An empty step (total 0) is complete at once; one of unknown size is told at its start only.
      const tenth = e.total === null ? -1 : e.total === 0 ? 10 : Math.floor((10 * e.done) / e.total);
      if (e.step !== step) {
        step = e.step;
        lastTenth = tenth;
        line(e);
      } else if (tenth > lastTenth || (e.total !== null && e.done >= e.total && lastTenth < 10)) {
        lastTenth = tenth;
        line(e);
      }
    },
    stop() {},
  };
}

function barReporter(label: string, stream: NodeJS.WriteStream): ProgressReporter {
  let bar: cliProgress.SingleBar | null = null;
  let step: string | null = null;
  const stop = () => {
    bar?.stop();
    bar = null;
  };
  return {
    progress(e) {
      if (e.step !== step || !bar) {
        stop();
        step = e.step;
        bar = new cliProgress.SingleBar(
          { stream, format: `${label}: ${e.step} [{bar}] {value}/{total} {percentage}% | ETA {eta_formatted}`, hideCursor: true, clearOnComplete: false },
          cliProgress.Presets.shades_classic,
        );
        bar.start(e.total ?? 0, e.done);
        return;
      }
      if (e.total !== null) bar.setTotal(e.total);
      bar.update(e.done);
    },
    stop,
  };
}
