/**
 * A Blob over bytes already in memory, answering `arrayBuffer()` with them. PGlite takes a data
 * dir archive and its file-system bundle only as Blobs and reads each with `arrayBuffer()`; on
 * Node 20 a Blob of a migrated test database (43 MB) took 165–260 ms to make and 270 ms to read
 * back, on every open. The other Blob methods answer from a real Blob made on first use.
 */
export class BytesBlob extends Blob {
  readonly #bytes: ArrayBuffer;
  readonly #type: string;
  #blob: Blob | null = null;

  /** `bytes` is the Blob's from now on: the caller must not change it. */
  constructor(bytes: ArrayBuffer, type = '') {
    super([]);
    this.#bytes = bytes;
    this.#type = type;
  }

  override get size(): number {
    return this.#bytes.byteLength;
  }

  override get type(): string {
    return this.#type;
  }

  /** The bytes themselves, not a copy: PGlite reads them once. */
  override arrayBuffer(): Promise<ArrayBuffer> {
    return Promise.resolve(this.#bytes);
  }

  override text(): Promise<string> {
    return Promise.resolve(new TextDecoder().decode(this.#bytes));
  }

  override stream(): ReturnType<Blob['stream']> {
    return this.#real().stream();
  }

  override slice(start?: number, end?: number, contentType?: string): Blob {
    return this.#real().slice(start, end, contentType);
  }

  #real(): Blob {
    return (this.#blob ??= new Blob([this.#bytes], { type: this.#type }));
  }
}
