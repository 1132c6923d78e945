import type { Db } from '../../db/database.ts';
import type { Clock } from '../../clock.ts';
import type { PhiCrypto } from '../../security/phi-crypto.ts';
import type { AuditLog } from '../audit/audit-log.ts';
import type { ClinicianSettingsService } from '../clinician-settings.ts';
import { createDashboard } from './dashboard.ts';
import { createEarnings } from './earnings.ts';
import { createSummaryReports } from './summary.ts';

/**
 * Dashboards and reports: read-only views over visits, notes and mileage. Definitions live in
 * the README ("Dashboards and reports"); reads that decrypt patient names are audited.
 */
export function createReports(deps: { db: Db; clock: Clock; phi: PhiCrypto; audit: AuditLog; settings: ClinicianSettingsService }) {
  return {
    ...createDashboard(deps),
    ...createEarnings(deps),
    ...createSummaryReports(deps),
  };
}

export type Reports = ReturnType<typeof createReports>;
