/**
 * Server frames that carry a list of JSON items, cut as the items come: at most 500 items and
 * 1 MiB of them per frame (docs/sync-protocol.md, Limits). The `changes` of a feed run (the
 * checkpoint on the last frame, so a run with no changes still sends one) and, on protocol 4,
 * a batch's `answers`.
 */
const FRAME_ITEMS = 500;
const FRAME_BYTES = 1024 * 1024;

export class ItemFrames {
  private items: string[] = [];
  private bytes = 0;

  /**
   * `frame` wraps the items of one frame (joined by commas) into its text; `send` takes each
   * full frame as it is cut. Each item was serialised once, by whoever adds it.
   */
  constructor(
    private readonly frame: (items: string) => string,
    private readonly send: (frame: string) => void,
  ) {}

  get pending(): number {
    return this.items.length;
  }

  add(json: string): void {
    const size = Buffer.byteLength(json);
    if (this.items.length > 0 && (this.items.length >= FRAME_ITEMS || this.bytes + size > FRAME_BYTES)) this.send(this.take(this.frame));
    this.items.push(json);
    this.bytes += size;
  }

  /** The items not sent yet, wrapped by `frame`; the list starts again empty. */
  take(frame: (items: string) => string = this.frame): string {
    const text = frame(this.items.join(','));
    this.items = [];
    this.bytes = 0;
    return text;
  }
}

/** The `changes` frames of one feed run. */
export class FeedFrames {
  private readonly frames: ItemFrames;

  constructor(send: (frame: string) => void) {
    this.frames = new ItemFrames(changesFrame(null), send);
  }

  add(json: string): void {
    this.frames.add(json);
  }

  /** The last frame: the changes left (perhaps none) and the checkpoint. */
  last(checkpoint: string): string {
    return this.frames.take(changesFrame(checkpoint));
  }
}

const changesFrame = (checkpoint: string | null) => (changes: string) =>
  `{"type":"changes","changes":[${changes}],"checkpoint":${JSON.stringify(checkpoint)},"more":${checkpoint === null}}`;

/** A batch's answers as protocol 4's `answers` frames, in order. */
export function answersFrames(answers: readonly object[], send: (frame: string) => void): void {
  const frames = new ItemFrames((items) => `{"type":"answers","answers":[${items}]}`, send);
  for (const a of answers) frames.add(JSON.stringify(a));
  if (frames.pending > 0) send(frames.take());
}
