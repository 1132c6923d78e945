/**
 * Where each frame of the socket goes once it is open: the change feed to the feed receiver,
 * the answers to mutations to the uploader, draft frames to DraftSync, a refreshed token's new
 * expiry to the session. `welcome` is not routed here: it changes the engine's state.
 */
import type { ServerMessage } from '@fieldchart/schema/sync';
import type { DraftSync } from './drafts.ts';
import type { FeedReceiver } from './feed.ts';
import type { Carrier, Uploader } from './uploader.ts';
import type { SyncWaiters } from './waiters.ts';

/** Every server frame but `welcome`. */
export type RoutedFrame = Exclude<ServerMessage, { type: 'welcome' }>;

export interface FrameRoutes {
  readonly feed: Pick<FeedReceiver, 'receive'>;
  readonly uploader: Pick<Uploader, 'answerAll'>;
  readonly drafts: Pick<DraftSync, 'handleDoc' | 'handleDocError' | 'retryUnavailable'>;
  readonly waiters: Pick<SyncWaiters, 'settle'>;
  /** The server took a refreshed token (`auth_ok`): keep it fresh until its expiry. */
  tokenAccepted(expiresAt: string): void;
  /** The carrier that answers on this socket come for (null before `welcome`). */
  carrier(): Carrier | null;
}

/** A function that hands each frame to its owner, in the engine's order. */
export function frameRouter(to: FrameRoutes): (m: RoutedFrame) => Promise<void> {
  return async (m) => {
    switch (m.type) {
      case 'auth_ok':
        return to.tokenAccepted(m.token_expires_at);
      case 'reset':
      case 'changes':
        return to.feed.receive(m);
      case 'synced':
        await to.feed.receive(m);
        // A draft the server could not open yet (its visit unknown) may open after this unit.
        to.drafts.retryUnavailable();
        return to.waiters.settle();
      case 'ack':
      case 'reject':
      case 'retry':
      case 'failed':
      case 'conflict':
        return to.uploader.answerAll([m], to.carrier());
      case 'answers': {
        // Protocol 4: a batch's answers in one frame, handled in order, its acknowledgements together.
        return to.uploader.answerAll(m.answers, to.carrier());
      }
      case 'doc':
        return to.drafts.handleDoc(m.doc, m.message);
      case 'doc_error':
        return to.drafts.handleDocError(m.doc, m.code, m.message);
    }
  };
}
