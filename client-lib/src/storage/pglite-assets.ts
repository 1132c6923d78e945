/**
 * A PGlite file system (an instance of one of PGlite's `Filesystem` classes), handed to PGlite
 * as it is. Named by its shape, not by PGlite's type: PGlite's declarations need Node's and
 * Emscripten's types, which a browser app type-checking its libraries may not have.
 */
export interface PgliteFilesystem {
  initialSyncFs(): Promise<void>;
  syncToFs(relaxedDurability?: boolean): Promise<void>;
  closeFs(): Promise<void>;
}

/** What an app may hand PGlite: its own copies of the WASM and data assets, or its own file system. */
export interface PgliteAssets {
  /** `pglite.wasm`, compiled (`WebAssembly.compileStreaming(fetch(url))`). */
  readonly pgliteWasmModule?: WebAssembly.Module;
  /** `initdb.wasm`, compiled. */
  readonly initdbWasmModule?: WebAssembly.Module;
  /** The contents of `pglite.data`. */
  readonly fsBundle?: Blob;
  readonly fs?: PgliteFilesystem;
  /**
   * An image of a new, empty database (`makeEmptyDeviceImage()`, same PGlite version), from
   * which a device's first open starts instead of running initdb: a client opened in 0.8–0.9 s
   * with it and 2.4–2.6 s without, on a server core (more on a phone). Used where the data dir
   * surely holds no database yet: in memory, a Node directory without one, or an IndexedDB
   * database the browser does not list; elsewhere initdb runs, and this is ignored. A function
   * is called only then (an app fetches the image only for a first open); if it fails, or has
   * not answered within 15 s (then its signal aborts: a slow network), initdb runs instead.
   */
  readonly loadDataDir?: Blob | ((signal: AbortSignal) => Promise<Blob>);
}
