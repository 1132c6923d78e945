/**
 * The little of the WebSocket API the sync transport uses, met by the browser's WebSocket,
 * React Native's, and the `ws` package's alike, so the transport never names a platform.
 */

/** The subset of a WebSocket the client needs. */
export interface WebSocketLike {
  readonly readyState: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  onopen: ((event: unknown) => void) | null;
  onmessage: ((event: { data: unknown }) => void) | null;
  onclose: ((event: { code: number; reason: string }) => void) | null;
  onerror: ((event: unknown) => void) | null;
}

/** A WebSocket constructor: `globalThis.WebSocket`, `ws`'s, or an app's own. */
export type WebSocketConstructor = new (url: string) => WebSocketLike;

/** `readyState` of an open socket (the same in every implementation). */
export const OPEN = 1;
