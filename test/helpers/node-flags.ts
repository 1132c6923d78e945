/**
 * Node flags for the node processes a test starts that may open a database (the servers and
 * CLIs of processes.ts, the worker of worker-cli.test.ts), as test/run.ts gives the test processes:
 * V8's baseline WebAssembly compiler only. A process that opens PGlite otherwise spends about
 * 2 s of CPU optimising PGlite's WebAssembly in background threads (4.5 s against 2.3 s for
 * one open, this machine), which a short-lived test process never earns back, and CI's two
 * cores are its bound. Not for production: a long-running server earns it.
 */
export const TEST_NODE_FLAGS: readonly string[] = ['--liftoff-only'];
