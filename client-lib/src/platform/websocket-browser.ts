/**
 * Browsers and React Native have a global WebSocket. Undefined elsewhere: the client then
 * asks for one through its `WebSocket` option.
 */
import type { WebSocketConstructor } from './websocket.ts';

export const PlatformWebSocket: WebSocketConstructor | undefined = (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket;
