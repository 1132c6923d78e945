/**
 * The hub's heartbeat as one connection takes it (server/src/sync/connection.ts `heartbeat`):
 * a socket that did not answer the previous ping is dropped, except one the server itself
 * stopped reading (the byte bound, SocketQueue `bytes`), which cannot have read its pong; that
 * one is judged again a full interval after reading resumes. The socket is a stand-in with the
 * members of ws's WebSocket the connection uses; the connection is the real one.
 */
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { test } from 'node:test';
import type { WebSocket } from 'ws';
import { SyncConnection } from '../../../server/src/sync/connection.ts';
import { ONE_SESSION_UPLOAD, type ConnectionHost, type SyncHooks } from '../../../server/src/sync/hooks.ts';

class StandInSocket extends EventEmitter {
  readonly OPEN = 1;
  readyState = 1;
  bufferedAmount = 0;
  isPaused = false;
  pings = 0;
  terminated = false;
  ping(): void {
    this.pings++;
  }
  terminate(): void {
    this.terminated = true;
    this.emit('close');
  }
  pause(): void {
    this.isPaused = true;
  }
  resume(): void {
    this.isPaused = false;
  }
  send(): void {}
  close(): void {
    this.emit('close');
  }
}

function connectionOn(socket: StandInSocket): SyncConnection {
  const host: ConnectionHost = {
    // No frame reaches a hook here: the socket says nothing.
    hooks: {} as SyncHooks,
    log: { warn: () => {}, error: () => {} },
    upload: ONE_SESSION_UPLOAD,
    now: () => new Date(),
    hasRoomFor: () => true,
    attach: () => {},
    detach: () => {},
  };
  return new SyncConnection(socket as unknown as WebSocket, host);
}

test('a socket that answers no ping is dropped at the next heartbeat; one that answers stays', () => {
  const socket = new StandInSocket();
  const connection = connectionOn(socket);
  connection.heartbeat();
  assert.equal(socket.pings, 1);
  socket.emit('pong');
  connection.heartbeat();
  assert.equal(socket.pings, 2);
  assert.equal(socket.terminated, false, 'answered: kept');
  connection.heartbeat();
  assert.equal(socket.terminated, true, 'no pong since the last ping: dropped');
});

test('a socket the server stopped reading is not dropped, and is judged a full interval after reading resumes', () => {
  const socket = new StandInSocket();
  const connection = connectionOn(socket);
  connection.heartbeat();
  assert.equal(socket.pings, 1);
  // The byte bound pauses the socket before its pong was read.
  socket.pause();
  connection.heartbeat();
  connection.heartbeat();
  assert.equal(socket.terminated, false, 'paused: not judged');
  assert.equal(socket.pings, 1, 'paused: not pinged either');
  socket.resume();
  // The first heartbeat after the resume pings; only a second without a pong drops it.
  connection.heartbeat();
  assert.equal(socket.terminated, false, 'the first heartbeat after resuming pings');
  assert.equal(socket.pings, 2);
  connection.heartbeat();
  assert.equal(socket.terminated, true);
});
