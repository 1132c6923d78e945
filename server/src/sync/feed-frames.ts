/**
 * Server frames that carry a list of JSON items (`ItemFrames`, the cut both sides share): at
 * most 500 items and 1 MiB of them per frame (docs/sync-protocol.md, Limits). The `changes` of a
 * feed run (the checkpoint on the last frame, so a run with no changes still sends one) and, on
 * protocol 4, a batch's `answers`.
 */
import { ItemFrames, type FrameLimits } from '@fieldchart/schema/sync';

/** The server's frames: 500 items and 1 MiB of them at most. */
const LIMITS: FrameLimits = { maxItems: 500, maxSize: 1024 * 1024, size: (json) => Buffer.byteLength(json) };

/** The `changes` frames of one feed run. */
export class FeedFrames {
  private readonly frames: ItemFrames;

  constructor(send: (frame: string) => void) {
    this.frames = new ItemFrames(LIMITS, changesFrame(null), send);
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
  const frames = new ItemFrames(LIMITS, (items) => `{"type":"answers","answers":[${items}]}`, send);
  for (const a of answers) frames.add(JSON.stringify(a));
  frames.flush();
}
