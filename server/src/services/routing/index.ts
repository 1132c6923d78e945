import type { Clock } from '../../clock.ts';
import type { Config } from '../../config.ts';
import type { Db } from '../../db/database.ts';
import type { PhiCrypto } from '../../security/phi-crypto.ts';
import type { AuditLog } from '../audit/audit-log.ts';
import { createGeocoder } from './geocoder.ts';
import { createSchedulingPolicy } from './policy.ts';
import { createRoutePlanner } from './route-planner.ts';
import { createTravelMatrices } from './travel.ts';

/** Route optimisation: the scheduling policy, geocoding, travel matrices and the planner. */
export function createRoutingServices(deps: { db: Db; clock: Clock; phi: PhiCrypto; audit: AuditLog; config: Config }) {
  const r = deps.config.routing;
  const schedulingPolicy = createSchedulingPolicy(deps);
  const geocoder = createGeocoder({
    ...deps,
    nominatim: r.nominatimUrl ? { url: r.nominatimUrl, userAgent: r.userAgent, minIntervalMs: r.geocoderMinIntervalMs, timeoutMs: r.geocoderTimeoutMs } : null,
  });
  const travel = createTravelMatrices({ traffic: r.traffic, osrmUrl: r.osrmUrl, timeoutMs: r.timeoutMs });
  return {
    schedulingPolicy,
    routePlanner: createRoutePlanner({ audit: deps.audit, phi: deps.phi, policy: schedulingPolicy, geocoder, travel, gpsAccuracyMeters: r.gpsAccuracyMeters }),
  };
}
