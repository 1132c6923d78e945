/**
 * The one-line status a `whenSynced` timeout carries (status.ts `describeStatus`): what the
 * device was doing, and never a message — a refusal's or a storage error's text may quote what
 * the clinician wrote.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { describeStatus, INITIAL_STATUS } from '../../client-lib/src/sync/status.ts';

test('a status in one line: flags, counts, the error code and why it halted, without the error text', () => {
  const line = describeStatus({
    ...INITIAL_STATUS,
    signedIn: true,
    connected: true,
    current: true,
    pending: 2,
    failed: 1,
    lastError: { code: 'rejected', message: 'patient.create (mutation 3): Jane Roe is already on your list', at: '2026-12-04T15:00:00.000Z' },
  });
  assert.equal(line, 'signedIn=true connected=true uploading=false downloading=false current=true pending=2 failed=1 lastError=rejected halted=no');
  assert.ok(!line.includes('Roe'));
  assert.equal(describeStatus({ ...INITIAL_STATUS, halted: 'device_revoked' }).endsWith('lastError=none halted=device_revoked'), true);
});
