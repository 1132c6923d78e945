/**
 * The outbox over HTTP (`POST /sync/mutations`) on a network that passes HTTP but not
 * websockets: taken up once enough socket opens failed in a row (reconnect.ts), only for the
 * session's own user's outbox — without a socket nothing else checks whose it is — and let go
 * as soon as a socket opens. The uploader and its answers are the same on either carrier.
 */
import type { RestClient } from '../rest/index.ts';
import type { Queryable } from '../storage/local-db.ts';
import { clientIdOf, getMeta, type StoredSession } from '../storage/meta.ts';
import { stepAfterRefusal, type EndStep } from './after-close.ts';
import { httpCarrier } from './carriers.ts';
import type { Carrier, Uploader } from './uploader.ts';

export interface HttpFallbackOptions {
  readonly db: Queryable;
  readonly rest: RestClient;
  readonly uploader: Pick<Uploader, 'attach' | 'detach' | 'isUsing'>;
  /** The stored session, if any. */
  session(): StoredSession | null;
  /** Enough socket opens failed in a row that websockets look blocked. */
  websocketsBlocked(): boolean;
  /** Syncing runs and no socket is welcomed. */
  socketless(): boolean;
  /** The server answered that this device's right to the data ended (403 `device_revoked`). */
  onEnded(step: EndStep): void;
}

export class HttpFallback {
  private readonly carrier: Carrier;

  constructor(private readonly opts: HttpFallbackOptions) {
    this.carrier = httpCarrier(opts.rest, () => clientIdOf(opts.db), (err) => {
      // The same end as the socket's 4411.
      const end = stepAfterRefusal(err);
      if (end) opts.onEnded(end);
    });
  }

  /** The outbox goes over HTTP if websockets look blocked and it is the session's user's. */
  async takeUpIfWanted(): Promise<void> {
    const { opts } = this;
    const session = opts.session();
    if (!opts.websocketsBlocked() || !opts.socketless() || !session) return;
    if (opts.uploader.isUsing(this.carrier)) return;
    const owner = await getMeta(opts.db, 'user_id');
    if (owner === null || session.user_id !== owner || !opts.socketless()) return;
    opts.uploader.attach(this.carrier);
  }

  /** A socket opened: it carries the outbox from its welcome on, not HTTP beside it. */
  letGo(): void {
    this.opts.uploader.detach(this.carrier);
  }
}
