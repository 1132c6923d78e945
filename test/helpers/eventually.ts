/**
 * Retries an assertion until it passes or the deadline passes — the way tests wait for
 * background work (mail, jobs, sync) without fixed sleeps.
 *
 * An attempt that never returns (a read stuck behind a lock, a request that hangs) fails at
 * the deadline too, saying so, instead of holding the test until its file's bound with no
 * word of where it stood.
 */
class HungAttempt extends Error {}

export async function eventually<T>(fn: () => Promise<T> | T, opts: { timeoutMs?: number; intervalMs?: number } = {}): Promise<T> {
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    let timer: NodeJS.Timeout | undefined;
    const hung = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new HungAttempt(`an attempt did not return within the ${timeoutMs} ms bound${lastError instanceof Error ? `; the one before failed: ${lastError.message}` : ''}`)),
        Math.max(0, deadline - Date.now()) + 1000,
      );
    });
    try {
      return await Promise.race([Promise.resolve().then(fn), hung]);
    } catch (err) {
      if (err instanceof HungAttempt) throw err;
      lastError = err;
    } finally {
      clearTimeout(timer);
    }
    if (Date.now() > deadline) throw lastError;
    await new Promise((r) => setTimeout(r, opts.intervalMs ?? 25));
  }
}
