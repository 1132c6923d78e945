/**
 * The sync status line and the offline banner, always on screen. Both are live regions
 * (role="status"), so a screen reader hears "offline" and "all changes on the server"
 * without the clinician looking.
 */
import type { FieldchartClient, SyncStatus } from '@fieldchart/client';
import { clockTime } from '../format.ts';

/** Offline as the clinician means it: the browser says so, or the socket fell for that reason. */
export function isOffline(status: SyncStatus): boolean {
  return !navigator.onLine || (!status.connected && status.lastError?.code === 'offline');
}

export function statusText(status: SyncStatus): string {
  const parts: string[] = [];
  if (isOffline(status)) parts.push('Offline');
  else if (status.connected) parts.push(status.uploading || status.downloading ? 'Syncing…' : 'Online');
  else parts.push('Connecting…');
  if (status.pending > 0) parts.push(`${status.pending} change${status.pending === 1 ? '' : 's'} on this phone`);
  else if (status.connected && status.current) parts.push('everything on the server');
  if (status.failed > 0) parts.push(`${status.failed} not accepted by the server`);
  if (status.lastSyncedAt) parts.push(`last synced ${clockTime(status.lastSyncedAt)}`);
  if (status.halted === 'unauthorized') parts.push('sign in again to sync');
  return parts.join(' · ');
}

/** Keeps `line` and `banner` in step with the client's status and the browser's network. */
export function mountStatus(client: FieldchartClient, line: HTMLElement, banner: HTMLElement): void {
  const render = () => {
    const status = client.sync.status;
    const text = statusText(status);
    if (line.textContent !== text) line.textContent = text;
    const offline = isOffline(status);
    banner.hidden = !offline;
    document.body.classList.toggle('offline', offline);
  };
  client.sync.on('status', render);
  window.addEventListener('online', render);
  window.addEventListener('offline', render);
  render();
}
