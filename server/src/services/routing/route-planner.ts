/**
 * POST /scheduling/optimize: the day's visits (non-cancelled, on that date in the clinician's
 * time zone — visit_date is stored as the clinician's wall-clock date), located, a travel
 * matrix over them and the home base, and the exact optimum from @fieldchart/schema/routing.
 * Reads only: nothing is rescheduled (POST /scheduling/apply does that).
 */
import { and, asc, eq, isNull, ne } from 'drizzle-orm';
import { visits } from '@fieldchart/schema/db';
import { MAX_EXACT_VISITS, planRoute, type LatLng, type RoutePlan } from '@fieldchart/schema/routing';
import { Invalid } from '../../errors.ts';
import type { PhiCrypto } from '../../security/phi-crypto.ts';
import { readClinicianSettings } from '../clinician-settings.ts';
import { zonedInstant } from '@fieldchart/schema/rules';
import type { AuditContext, AuditLog } from '../audit/audit-log.ts';
import type { Geocoder } from './geocoder.ts';
import { learnedLocations, locate } from './locations.ts';
import type { SchedulingPolicyService } from './policy.ts';
import type { RoutingSource, TravelMatrices } from './travel.ts';

/** Fewer stops than this have nothing to optimise (the spec's 422). */
export const MIN_ROUTED_VISITS = 3;

export interface RouteSuggestion extends RoutePlan {
  readonly routing_source: RoutingSource;
  readonly unrouted: string[];
}

export function createRoutePlanner(deps: {
  audit: AuditLog;
  phi: PhiCrypto;
  policy: SchedulingPolicyService;
  geocoder: Geocoder;
  travel: TravelMatrices;
  gpsAccuracyMeters: number;
}) {
  const { audit, phi, policy, geocoder, travel } = deps;

  return {
    async optimize(ctx: AuditContext, ownerId: string, input: { date: string; lock_first?: boolean | undefined }): Promise<{ suggestion: RouteSuggestion; preferred: RoutingSource }> {
      // The addresses are PHI: reading them is audited, in a transaction that ends before any network call.
      const day = await audit.around(ctx, { action: 'read', resourceType: 'visit', details: { route: 'scheduling_optimize', date: input.date } }, async (tx, note) => {
        const rows = await tx
          .select({ id: visits.id, patientId: visits.patientId, startTime: visits.startTime, durationMinutes: visits.durationMinutes, addressEnc: visits.addressEnc })
          .from(visits)
          .where(and(eq(visits.ownerId, ownerId), eq(visits.visitDate, input.date), ne(visits.status, 'cancelled'), isNull(visits.deletedAt)))
          .orderBy(asc(visits.startTime), asc(visits.createdAt), asc(visits.id));
        note({ details: { count: rows.length } });
        if (rows.length > MAX_EXACT_VISITS) {
          throw Invalid.field('date', `has ${rows.length} visits; at most ${MAX_EXACT_VISITS} can be optimised`, 'too_many_visits');
        }
        const stops = rows.map((r) => ({ ...r, address: phi.open(r.addressEnc, 'visits', 'address_enc', r.id) }));
        const patientIds = [...new Set(stops.flatMap((s) => (s.patientId ? [s.patientId] : [])))];
        const learned = await learnedLocations(tx, phi, ownerId, patientIds, deps.gpsAccuracyMeters);
        const { time_zone: timeZone } = await readClinicianSettings(tx, ownerId);
        return { stops, learned, policy: await policy.get(ownerId, tx), timeZone };
      });
      const located = await locate(day.stops, day.learned, geocoder);
      const routed = day.stops.flatMap((s, i) => (located[i] ? [{ stop: s, point: located[i].point }] : []));
      const unrouted = day.stops.filter((_, i) => !located[i]).map((s) => s.id);
      if (routed.length < MIN_ROUTED_VISITS) {
        throw Invalid.field(
          'date',
          `has ${routed.length} visit(s) with a known location; at least ${MIN_ROUTED_VISITS} are needed to optimise`,
          'too_few_geocodable_visits',
        );
      }
      let home: LatLng | null = null;
      const p = day.policy;
      if (p.home_base_lat !== null && p.home_base_lng !== null) home = { lat: p.home_base_lat, lng: p.home_base_lng };
      else if (p.home_base_address) home = (await geocoder.geocode(p.home_base_address))?.point ?? null;
      const points = routed.map((r) => r.point);
      // Live traffic is predicted for when the day's driving starts.
      const departAt = zonedInstant(input.date, p.day_start, day.timeZone);
      const matrix = await travel.matrix(home ? [...points, home] : points, departAt);
      const outcome = planRoute({
        visits: routed.map((r) => ({ id: r.stop.id, startTime: r.stop.startTime, durationMinutes: r.stop.durationMinutes })),
        minutes: matrix.minutes,
        miles: matrix.miles,
        home: home !== null,
        // lock_first keeps the day's current first visit: the first that can be routed.
        lockFirst: input.lock_first === true,
        dayStart: p.day_start,
        bufferMinutes: p.buffer_minutes,
      });
      if (!outcome.ok) throw Invalid.field('date', outcome.message, outcome.reason);
      return { suggestion: { ...outcome.plan, routing_source: matrix.source, unrouted }, preferred: travel.preferred };
    },
  };
}
