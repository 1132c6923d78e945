/**
 * The one ordering queue of a socket: its frames are handled in arrival order
 * (docs/sync-protocol.md). Most frames are handled one at a time, each awaited before the
 * next; consecutive frames that `batch` accepts (mutations) are handed over together. Frames
 * the caller marks `alongside` (draft messages) are started in order without waiting for the
 * previous one to finish — typing on one device reaches the others while the previous
 * keystroke is still being stored; the drafts module keeps their order per document — but
 * any frame handled one at a time waits for all of them first (a note takes the draft's text:
 * the draft messages before it must be stored).
 */
export interface SocketQueueOptions<F> {
  /** Frames waiting at most; `push` refuses more (the device ignores the protocol's limits). */
  readonly capacity: number;
  /** Frames handed over together at most. */
  readonly maxBatch: number;
  /** Started in order but not awaited before the next frame. */
  alongside(frame: F): boolean;
  /** May be handed over together with the frames next to it of the same kind. */
  batch(frame: F): boolean;
  /**
   * A run of `batch` frames shorter than `maxBatch` is about to be handed over: how many more
   * are on their way (the caller knows its peer's window), and for how long at most to wait for
   * them. Absent, or 0: hand over what is there.
   */
  expect?(run: number): { readonly frames: number; readonly withinMs: number };
  handle(frames: F[]): Promise<void>;
  /** A handler failed (the database, a bug): the socket is closed. */
  onError(err: unknown): void;
  /**
   * Bytes held at most, waiting or being handled: past `max` the caller stops reading its
   * socket (`pressure(true)`) until they fall to half (`pressure(false)`). Frames may be
   * megabytes each, and `capacity` alone would let one device park gigabytes; held back, its
   * frames wait in TCP's buffers instead and nothing it sent is refused.
   */
  readonly bytes?: {
    readonly max: number;
    weigh(frame: F): number;
    pressure(on: boolean): void;
  };
}

export class SocketQueue<F> {
  private readonly waiting: F[] = [];
  private readonly inFlight = new Set<Promise<void>>();
  private running = false;
  private stopped = false;
  /** A wait for more frames of a run (`expect`): ended by `push` once enough are waiting. */
  private arrival: { readonly until: number; readonly done: () => void } | null = null;
  /** Bytes of the frames waiting or being handled (`bytes.weigh`), and whether reading is held back. */
  private held = 0;
  private pressed = false;

  constructor(private readonly options: SocketQueueOptions<F>) {}

  /** False when the queue is full: the caller closes the socket. */
  /** Frames received and not handled yet (/metrics). */
  get depth(): number {
    return this.waiting.length;
  }

  /** Bytes of the frames waiting or being handled. */
  get bytesHeld(): number {
    return this.held;
  }

  push(frame: F): boolean {
    if (this.waiting.length >= this.options.capacity) return false;
    this.waiting.push(frame);
    const { bytes } = this.options;
    if (bytes) {
      this.held += bytes.weigh(frame);
      if (!this.pressed && this.held > bytes.max) {
        this.pressed = true;
        bytes.pressure(true);
      }
    }
    if (this.arrival && this.waiting.length >= this.arrival.until) this.arrival.done();
    void this.pump();
    return true;
  }

  /** Drops what is waiting; frames in flight finish on their own. */
  stop(): void {
    this.stopped = true;
    this.release(this.waiting.splice(0));
    this.arrival?.done();
  }

  /** Frames handled (or dropped): their bytes no longer count. */
  private release(frames: readonly F[]): void {
    const { bytes } = this.options;
    if (!bytes) return;
    for (const f of frames) this.held -= bytes.weigh(f);
    if (this.pressed && this.held <= bytes.max / 2) {
      this.pressed = false;
      bytes.pressure(false);
    }
  }

  private async pump(): Promise<void> {
    if (this.running) return;
    this.running = true;
    const { options } = this;
    try {
      while (this.waiting.length > 0 && !this.stopped) {
        const head = this.waiting[0] as F;
        if (options.alongside(head)) {
          this.waiting.shift();
          this.start(options.handle([head]).finally(() => this.release([head])));
          continue;
        }
        while (this.inFlight.size > 0) await Promise.all([...this.inFlight]);
        if (this.stopped) break;
        let n = this.runLength();
        if (n < options.maxBatch && n === this.waiting.length && options.batch(head) && options.expect) {
          const { frames, withinMs } = options.expect(n);
          if (frames > 0 && withinMs > 0) {
            await this.arrivalOf(Math.min(options.maxBatch, n + frames), withinMs);
            if (this.stopped) break;
            n = this.runLength();
          }
        }
        const frames = this.waiting.splice(0, n);
        try {
          await options.handle(frames);
        } finally {
          this.release(frames);
        }
      }
    } catch (err) {
      this.stop();
      options.onError(err);
    } finally {
      this.running = false;
    }
  }

  /** The frames at the head handed over together: one, or a run of `batch` frames. */
  private runLength(): number {
    const { options } = this;
    let n = 1;
    if (options.batch(this.waiting[0] as F)) while (n < this.waiting.length && n < options.maxBatch && options.batch(this.waiting[n] as F)) n++;
    return n;
  }

  /** Resolves once `count` frames wait, or after `ms`. */
  private arrivalOf(count: number, ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => done(), ms);
      const done = () => {
        clearTimeout(timer);
        this.arrival = null;
        resolve();
      };
      this.arrival = { until: count, done };
    });
  }

  private start(work: Promise<void>): void {
    const settled = work.then(
      () => {},
      (err: unknown) => {
        this.stop();
        this.options.onError(err);
      },
    );
    this.inFlight.add(settled);
    void settled.then(() => this.inFlight.delete(settled));
  }
}
