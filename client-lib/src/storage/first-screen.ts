/**
 * The first screen: an app's first view (the field app's visit list), read from the device
 * database and kept sealed beside it, so that a cold start can show it before PGlite has
 * opened (seconds on a slow phone). It is a copy of what the database answers, never more:
 *
 * - It is sealed with the device key (AES-256-GCM, additional data naming the database), so it
 *   holds PHI the way the database does; a rotated key (sign-out, another user) leaves it
 *   unreadable.
 * - Every statement that may change the database (anything but a `select`, and every
 *   transaction) first deletes it and waits for the delete: a write that reached the database
 *   never has an older first screen beside it, even if the app dies right after.
 * - A read is kept only if no write was in flight when it began and none began or ended while it
 *   ran; store operations run in call order, so a later write's delete lands after the put.
 * - After writes settle the app's reader runs again and the new answer is kept: the copy follows
 *   the database without the app re-rendering.
 *
 * Only an instance that owns its database keeps one: with several tabs (a database worker) the
 * writes of another tab are not seen here, so nothing is kept.
 */
import { ad, openJson, sealJson, type RowCipher } from './row-cipher.ts';

/** Where the sealed first screen of one database is kept (platform/device-key-*.ts). */
export interface FirstScreenStore {
  get(): Promise<Uint8Array | null>;
  put(sealed: Uint8Array): Promise<void>;
  delete(): Promise<void>;
}

/** For `memory://` databases: kept as long as the store object. */
export function memoryFirstScreenStore(): FirstScreenStore {
  let kept: Uint8Array | null = null;
  return {
    get: async () => kept,
    async put(sealed) {
      kept = sealed;
    },
    async delete() {
      kept = null;
    },
  };
}

/** The additional data the first screen of `dataDir` is sealed with. */
export const firstScreenAd = (dataDir: string) => ad('first_screen', dataDir);

/** How long the database stays quiet after a write before the reader runs again. */
const REFRESH_AFTER_MS = 400;

/** An app's reader: what its first screen shows, or null when there is nothing to keep (signed out). */
export type FirstScreenReader<T> = () => Promise<T | null>;

export class FirstScreenCache {
  /** Counts the starts and ends of writes: a read is kept only if it saw no change of it. */
  #generation = 0;
  #writing = 0;
  /** The delete of the kept screen that writes since the last put wait for; null once a put is queued. */
  #cleared: Promise<void> | null = null;
  /** Store operations, in call order. */
  #queue: Promise<unknown> = Promise.resolve();
  #reader: FirstScreenReader<unknown> | null = null;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #closed = false;

  constructor(
    private readonly store: FirstScreenStore | null,
    private readonly dataDir: string,
    private readonly cipher: () => RowCipher,
  ) {}

  #enqueue<T>(op: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(op, op);
    this.#queue = run.catch(() => undefined);
    return run;
  }

  /** Runs a write: the kept screen is deleted before it starts; the reader runs again after. */
  async write<T>(run: () => Promise<T>): Promise<T> {
    if (!this.store) return run();
    this.#generation++;
    this.#writing++;
    try {
      // A failed delete fails the write: it must not land beside a screen that no longer matches.
      const cleared = (this.#cleared ??= this.#enqueue(() => this.store!.delete()).catch((err: unknown) => {
        this.#cleared = null;
        throw err;
      }));
      await cleared;
      return await run();
    } finally {
      this.#writing--;
      this.#generation++;
      this.#schedule();
    }
  }

  /** Reads the first screen with `reader`, keeps it (sealed) if no write overlapped, and again after later writes. */
  async read<T>(reader: FirstScreenReader<T>): Promise<T | null> {
    this.#reader = reader;
    return (await this.#capture(reader)).value;
  }

  async #capture<T>(reader: FirstScreenReader<T>): Promise<{ value: T | null; kept: boolean }> {
    const quiet = this.#writing === 0;
    const generation = this.#generation;
    const value = await reader();
    if (!this.store || this.#closed || value === null || !quiet) return { value, kept: false };
    const sealed = await sealJson(this.cipher(), value, firstScreenAd(this.dataDir));
    if (generation !== this.#generation || this.#writing > 0 || this.#closed) return { value, kept: false };
    // From here a write deletes again, and its delete is queued after this put.
    this.#cleared = null;
    await this.#enqueue(() => this.store!.put(sealed)).catch(() => undefined);
    return { value, kept: true };
  }

  #schedule(): void {
    if (!this.#reader || this.#closed) return;
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      const reader = this.#reader;
      if (!reader || this.#writing > 0) return;
      // A reader that fails (the database closing) keeps nothing; a read that a write overlapped
      // is read again when that write ends.
      this.#capture(reader).catch(() => undefined);
    }, REFRESH_AFTER_MS);
    // Never keeps a process (Node) alive on its own.
    (this.#timer as { unref?: () => void }).unref?.();
  }

  /** Stops re-reading (the database is closing); what is kept stays. */
  close(): void {
    this.#closed = true;
    clearTimeout(this.#timer);
  }
}

/**
 * The kept first screen of `dataDir` (`sealed`, from its store), opened with the device key, or
 * null (none kept, or it no longer opens: the key was rotated). Reads no database: for the very
 * start of an app.
 */
export async function openFirstScreen<T>(sealed: Uint8Array | null, key: CryptoKey | null, cipherOf: (key: CryptoKey) => RowCipher, dataDir: string): Promise<T | null> {
  if (!key || !sealed) return null;
  try {
    return await openJson<T>(cipherOf(key), sealed, firstScreenAd(dataDir));
  } catch {
    return null;
  }
}
