/**
 * Whose data the device holds — one clinician's at a time — and its removal. The same rule
 * serves someone signing in (create-client.ts) and the server naming the user in `welcome`;
 * the removal serves sign-out, another user signing in, and the server ending the device's
 * right to the data (a disabled account, a revoked device, an organization seat that ended).
 */
import { clearDictations, unsentDictationCount } from '../storage/dictation-store.ts';
import { clearDrafts, unconfirmedDrafts } from '../storage/draft-store.ts';
import { clearFeed } from '../storage/feed-store.ts';
import type { LocalDb, Queryable } from '../storage/local-db.ts';
import { deleteMeta, getMeta, setMeta, type StoredSession } from '../storage/meta.ts';
import { clearOutbox, failureCount, pendingCount } from '../storage/outbox.ts';
import type { DraftSync } from './drafts.ts';
import type { Emitter } from './emitter.ts';
import type { SyncEvents } from './events.ts';
import type { StatusStore, SyncStatus } from './status.ts';

/** Work that exists only on this device: queued writes, parked ones and unconfirmed draft edits. */
export async function unsyncedWork(db: Queryable): Promise<{ writes: number; drafts: number }> {
  // A dictation whose audio is only here counts as a write: signing out must not lose it unasked.
  const writes = (await pendingCount(db)) + (await failureCount(db)) + (await unsentDictationCount(db));
  const drafts = (await unconfirmedDrafts(db)).length;
  return { writes, drafts };
}

/**
 * Whose data the device holds, for `userId` about to use it: the same user, nobody yet, or
 * another clinician — whose rows may go, unless work of theirs exists only here (it must never
 * be uploaded as someone else).
 */
export async function deviceOwnerFor(
  db: Queryable,
  userId: string,
): Promise<{ kind: 'same' | 'none' | 'other' } | { kind: 'other_unsynced'; writes: number; drafts: number }> {
  const known = await getMeta(db, 'user_id');
  if (known === null) return { kind: 'none' };
  if (known === userId) return { kind: 'same' };
  const work = await unsyncedWork(db);
  return work.writes > 0 || work.drafts > 0 ? { kind: 'other_unsynced', ...work } : { kind: 'other' };
}

/**
 * On `welcome` (the server names the user): make the device `userId`'s. Another clinician's
 * rows go (`restart`: the feed must start over for this user), unless work of theirs exists
 * only here (`blocked`: it must never be uploaded as someone else).
 */
export async function claimDevice(db: LocalDb, userId: string): Promise<{ kind: 'ok' | 'restart' } | { kind: 'blocked'; writes: number; drafts: number }> {
  const owner = await deviceOwnerFor(db, userId);
  if (owner.kind === 'other_unsynced') return { kind: 'blocked', writes: owner.writes, drafts: owner.drafts };
  if (owner.kind === 'other') {
    await clearUserData(db, userId);
    return { kind: 'restart' };
  }
  if (owner.kind === 'none') await setMeta(db, 'user_id', userId);
  return { kind: 'ok' };
}

/**
 * Removes a user's data from the device (rows, outbox, drafts), naming `nextUser` as the owner,
 * then replaces the device key: what the deleted rows left in the files (dead rows, WAL) was
 * sealed with the old key, which no longer exists.
 */
export async function clearUserData(db: LocalDb, nextUser: string | null): Promise<void> {
  // Cleared twice it does no harm: across a change of the leading tab it is made again rather
  // than left undone (a revoked device must not keep the data because a tab closed).
  await db.transaction(
    async (tx) => {
      await clearFeed(tx);
      await clearOutbox(tx);
      await clearDrafts(tx);
      await clearDictations(tx);
      if (nextUser === null) await deleteMeta(tx, 'user_id');
      else await setMeta(tx, 'user_id', nextUser);
    },
    { repeatable: true },
  );
  await db.rotateKey();
}

/** What the status says of a device whose stored session is `session`: the outbox's counts, the last sync. */
export async function storedStatus(db: Queryable, session: StoredSession | null): Promise<Partial<SyncStatus>> {
  return {
    signedIn: session !== null,
    pending: await pendingCount(db),
    failed: await failureCount(db),
    lastSyncedAt: await getMeta(db, 'last_synced_at'),
    halted: session ? null : 'signed_out',
  };
}

export interface DeviceDataOptions {
  readonly db: LocalDb;
  readonly drafts: Pick<DraftSync, 'clear'>;
  readonly status: StatusStore;
  readonly events: Emitter<SyncEvents>;
  /** Tells the app's other tabs that the device key was replaced (nothing without tabs). */
  readonly tellTabs: () => void;
}

/** The device's data as the engine acts on it: claimed for the welcomed user, or wiped. */
export class DeviceData {
  constructor(private readonly opts: DeviceDataOptions) {}

  /**
   * Removes the user's data from the device — synced rows, the outbox and drafts, unsynced
   * work included — and replaces the device key; the app hears a reset.
   */
  async wipe(): Promise<void> {
    const { db, drafts, status, events } = this.opts;
    drafts.clear();
    await clearUserData(db, null);
    this.opts.tellTabs();
    status.patch({ pending: 0, failed: 0 });
    events.emit('change', { reason: 'reset' });
  }

  /** A local write was made: the status counts the outbox again. */
  async counted(): Promise<void> {
    const { db, status } = this.opts;
    try {
      status.patch({ pending: await pendingCount(db), failed: await failureCount(db) });
    } catch (err) {
      // The write is made; a count that cannot be read now (a full storage) is state, not its
      // failure. One more is pending at least, so `whenSynced` does not answer early.
      status.failWith(err, 'internal');
      status.patch({ pending: status.value.pending + 1 });
    }
  }

  /** {@link wipe} in the background: a storage failure here is state, like any other. */
  async wipeInBackground(): Promise<void> {
    try {
      await this.wipe();
    } catch (err) {
      this.opts.status.failWith(err, 'internal');
    }
  }

  /**
   * The server named the socket's user (`welcome`): the device becomes theirs (`ok`); another
   * clinician's rows went and the feed must start over (`restart`: the app and the other tabs
   * heard a reset); or another clinician's unsynced work is here and must never be uploaded as
   * this user (`blocked`: the status says so). A session begun from tokens names no user until
   * now; signing that clinician in again uploads their work.
   */
  async claim(userId: string): Promise<'ok' | 'restart' | 'blocked'> {
    const { db, drafts, status, events } = this.opts;
    const claim = await claimDevice(db, userId);
    if (claim.kind === 'blocked') {
      status.fail('other_user_outbox', `${claim.writes} write(s) and ${claim.drafts} draft(s) of another user are on this device: sign that user in to upload them, or sign out with force`);
      return 'blocked';
    }
    if (claim.kind === 'restart') {
      this.opts.tellTabs();
      drafts.clear();
      events.emit('change', { reason: 'reset' });
    }
    return claim.kind;
  }
}
