/**
 * Performance marks of a client's start in a page (the database opened, unlocked, migrated;
 * the sync engine started), so an app's trace and the cold-start bench can tell where a start
 * spends its time. The first of each name only: a page opens its client once. Nothing outside a
 * page, where marks would pile up in a long-running process.
 */
export function startMark(name: string): void {
  if (typeof document === 'undefined' || typeof performance === 'undefined' || typeof performance.mark !== 'function') return;
  if (performance.getEntriesByName(name).length === 0) performance.mark(name);
}
