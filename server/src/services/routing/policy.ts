/** The clinician's scheduling policy (CONTRACT.md "home base"): one row, defaults until the first PUT. */
import { eq } from 'drizzle-orm';
import type * as z from 'zod';
import type { schedulingPolicyBody } from '@fieldchart/schema/api';
import { schedulingPolicies } from '@fieldchart/schema/db';
import type { Clock } from '../../clock.ts';
import type { Db } from '../../db/database.ts';
import type { PhiCrypto } from '../../security/phi-crypto.ts';

export type SchedulingPolicyInput = z.infer<typeof schedulingPolicyBody>;

export interface SchedulingPolicy {
  readonly home_base_address: string | null;
  readonly home_base_lat: number | null;
  readonly home_base_lng: number | null;
  readonly default_visit_minutes: number;
  readonly buffer_minutes: number;
  readonly day_start: string;
}

export const DEFAULT_POLICY: SchedulingPolicy = Object.freeze({
  home_base_address: null,
  home_base_lat: null,
  home_base_lng: null,
  default_visit_minutes: 45,
  buffer_minutes: 10,
  day_start: '08:00',
});

export function createSchedulingPolicy(deps: { db: Db; clock: Clock; phi: PhiCrypto }) {
  const { db, clock, phi } = deps;

  async function get(userId: string, tx: Db = db): Promise<SchedulingPolicy> {
    const [row] = await tx.select().from(schedulingPolicies).where(eq(schedulingPolicies.userId, userId));
    if (!row) return DEFAULT_POLICY;
    return {
      home_base_address: phi.open(row.homeBaseAddressEnc, 'scheduling_policies', 'home_base_address_enc', userId),
      home_base_lat: row.homeBaseLat,
      home_base_lng: row.homeBaseLng,
      default_visit_minutes: row.defaultVisitMinutes,
      buffer_minutes: row.bufferMinutes,
      day_start: row.dayStart,
    };
  }

  return {
    get,

    /** Members left out keep their value; a new address without coordinates drops the old coordinates (they placed the old address). */
    async put(userId: string, input: SchedulingPolicyInput): Promise<SchedulingPolicy> {
      return db.transaction(async (tx) => {
        const [locked] = await tx.select({ userId: schedulingPolicies.userId }).from(schedulingPolicies).where(eq(schedulingPolicies.userId, userId)).for('update');
        const current = locked ? await get(userId, tx) : DEFAULT_POLICY;
        const address = input.home_base_address === undefined ? current.home_base_address : input.home_base_address;
        const addressChanged = input.home_base_address !== undefined && input.home_base_address !== current.home_base_address;
        let lat = current.home_base_lat;
        let lng = current.home_base_lng;
        if (input.home_base_lat !== undefined) {
          lat = input.home_base_lat;
          lng = input.home_base_lng ?? null;
        } else if (addressChanged) {
          lat = null;
          lng = null;
        }
        const next: SchedulingPolicy = {
          home_base_address: address,
          home_base_lat: lat,
          home_base_lng: lng,
          default_visit_minutes: input.default_visit_minutes ?? current.default_visit_minutes,
          buffer_minutes: input.buffer_minutes ?? current.buffer_minutes,
          day_start: input.day_start ?? current.day_start,
        };
        const values = {
          homeBaseAddressEnc: phi.seal(next.home_base_address, 'scheduling_policies', 'home_base_address_enc', userId),
          homeBaseLat: next.home_base_lat,
          homeBaseLng: next.home_base_lng,
          defaultVisitMinutes: next.default_visit_minutes,
          bufferMinutes: next.buffer_minutes,
          dayStart: next.day_start,
          updatedAt: clock.now(),
        };
        await tx.insert(schedulingPolicies).values({ userId, ...values }).onConflictDoUpdate({ target: schedulingPolicies.userId, set: values });
        return next;
      });
    },
  };
}

export type SchedulingPolicyService = ReturnType<typeof createSchedulingPolicy>;
