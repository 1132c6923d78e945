import type { Clock } from '../../clock.ts';
import type { Db } from '../../db/database.ts';
import type { PhiCrypto } from '../../security/phi-crypto.ts';
import type { AuditLog } from '../audit/audit-log.ts';
import { createPatientCharts } from './charts.ts';
import { createPatientRecords } from './patients.ts';
import { createPatientsBatch } from './patients-batch.ts';

/**
 * The patients area: records (create, update, list with blind-index search) and charts
 * (chart details, scheduled visits, general summary, documents). A patient belongs to the
 * clinician who created it (`owner_id`); every lookup is scoped to the caller.
 */
export function createPatients(deps: { db: Db; clock: Clock; phi: PhiCrypto; audit: AuditLog }) {
  return {
    ...createPatientRecords(deps),
    ...createPatientCharts(deps),
    /** `create` for many queued sync mutations at once (services/sync/mutation-sets.ts). */
    batch: createPatientsBatch(deps),
  };
}

export type Patients = ReturnType<typeof createPatients>;
