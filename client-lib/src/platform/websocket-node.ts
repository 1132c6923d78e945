/**
 * Node 20 has no global WebSocket: `ws` provides it. Chosen through the package's `#websocket`
 * import under the `node` condition, so a browser bundle never sees this file or `ws`.
 */
import WebSocket from 'ws';
import type { WebSocketConstructor } from './websocket.ts';

// Prefer a global WebSocket where the runtime has one (Node 22+), for parity with browsers.
export const PlatformWebSocket: WebSocketConstructor | undefined =
  (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket ?? (WebSocket as unknown as WebSocketConstructor);
