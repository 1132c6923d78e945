/**
 * Retries an assertion until it passes or the deadline passes — the way tests wait for
 * background work (mail, jobs, sync) without fixed sleeps.
 */
export async function eventually<T>(fn: () => Promise<T> | T, opts: { timeoutMs?: number; intervalMs?: number } = {}): Promise<T> {
  const deadline = Date.now() + (opts.timeoutMs ?? 10_000);
  let lastError: unknown;
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > deadline) throw lastError;
    await new Promise((r) => setTimeout(r, opts.intervalMs ?? 25));
  }
}
