import type { Clock } from '../../clock.ts';
import type { Db } from '../../db/database.ts';
import type { PhiCrypto } from '../../security/phi-crypto.ts';
import type { AuditLog } from '../audit/audit-log.ts';
import type { ClinicianSettingsService } from '../clinician-settings.ts';
import { createMileage } from './mileage.ts';
import { createMileageBatch } from './mileage-batch.ts';
import { createPushTokens } from './push-tokens.ts';
import { createReschedule } from './reschedule.ts';
import { createScheduling } from './scheduling.ts';
import { createSoapNotes } from './soap-notes.ts';
import { createTimerEvents } from './timer-events.ts';
import { createTimerEventsBatch } from './timer-events-batch.ts';
import { createVisitQueries } from './visit-queries.ts';
import { createVisitRecords } from './visit-records.ts';

/** The clinician's visit day: scheduling, reading, timer/EVV, SOAP notes, mileage, push tokens. */
export function createVisitServices(deps: { db: Db; clock: Clock; phi: PhiCrypto; audit: AuditLog; settings: ClinicianSettingsService }) {
  const records = createVisitRecords({ phi: deps.phi });
  return {
    visitScheduling: createScheduling(deps),
    visitReschedule: createReschedule(deps),
    visitQueries: createVisitQueries({ ...deps, records }),
    visitTimer: createTimerEvents(deps),
    soapNotes: createSoapNotes(deps),
    visitMileage: createMileage(deps),
    /** The same rules for many queued sync mutations at once (services/sync/mutation-sets.ts). */
    visitTimerBatch: createTimerEventsBatch(deps),
    visitMileageBatch: createMileageBatch(deps),
    pushTokens: createPushTokens(deps),
  };
}

export type VisitServices = ReturnType<typeof createVisitServices>;
