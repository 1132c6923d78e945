/**
 * The `changes` frames of one feed run, cut as its changes arrive: at most 500 changes and
 * 1 MiB of them per frame (docs/sync-protocol.md, Limits), the checkpoint on the last, so a
 * run with no changes still sends one.
 */
const FRAME_CHANGES = 500;
const FRAME_BYTES = 1024 * 1024;

export class FeedFrames {
  private changes: string[] = [];
  private bytes = 0;

  /** `send` takes each full frame as it is cut; each change was serialised once, by the feed. */
  constructor(private readonly send: (frame: string) => void) {}

  add(json: string): void {
    const size = Buffer.byteLength(json);
    if (this.changes.length > 0 && (this.changes.length >= FRAME_CHANGES || this.bytes + size > FRAME_BYTES)) this.send(this.frame(null));
    this.changes.push(json);
    this.bytes += size;
  }

  /** The last frame: the changes left (perhaps none) and the checkpoint. */
  last(checkpoint: string): string {
    return this.frame(checkpoint);
  }

  private frame(checkpoint: string | null): string {
    const frame = `{"type":"changes","changes":[${this.changes.join(',')}],"checkpoint":${JSON.stringify(checkpoint)},"more":${checkpoint === null}}`;
    this.changes = [];
    this.bytes = 0;
    return frame;
  }
}
