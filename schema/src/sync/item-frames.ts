/**
 * Frames that carry a list of JSON items, cut as the items come: at most `maxItems` items and
 * `maxSize` of them (as `size` measures an item) per frame, an item larger than that alone in a
 * frame of its own. Both sides of the sync channel cut their lists this way
 * (docs/sync-protocol.md, Limits): the server a feed run's `changes` and a batch's `answers`, the
 * device, from protocol 5, its `mutations`.
 */
export interface FrameLimits {
  readonly maxItems: number;
  readonly maxSize: number;
  /** An item's size on the wire, or a bound of it. */
  readonly size: (json: string) => number;
}

export class ItemFrames {
  private items: string[] = [];
  private size = 0;

  /**
   * `frame` wraps the items of one frame (joined by commas) into its text; `send` takes each
   * full frame as it is cut, with how many items it holds. Each item was serialised once, by
   * whoever adds it.
   */
  constructor(
    private readonly limits: FrameLimits,
    private readonly frame: (items: string) => string,
    private readonly send: (frame: string, items: number) => void,
  ) {}

  add(json: string): void {
    const size = this.limits.size(json);
    if (this.items.length > 0 && (this.items.length >= this.limits.maxItems || this.size + size > this.limits.maxSize)) this.flush();
    this.items.push(json);
    this.size += size;
  }

  /** Sends the items not sent yet, if there are any, as one frame. */
  flush(): void {
    const items = this.items.length;
    if (items > 0) this.send(this.take(), items);
  }

  /** The items not sent yet, wrapped by `frame`; the list starts again empty. */
  take(frame: (items: string) => string = this.frame): string {
    const text = frame(this.items.join(','));
    this.items = [];
    this.size = 0;
    return text;
  }
}
