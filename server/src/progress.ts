/**
 * How a long operator task (seeding, key rotation, re-encryption, backup) reports how far it
 * is: `done` of `total` units of a named step (`total` null when not known ahead). Services
 * call it; the CLI draws it as a bar on a terminal and plain lines otherwise, also when the
 * task runs inside a server and the events come over the admin socket.
 */
export interface ProgressEvent {
  readonly step: string;
  readonly done: number;
  readonly total: number | null;
}

export type Progress = (event: ProgressEvent) => void;

export const noProgress: Progress = () => {};
