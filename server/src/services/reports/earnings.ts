import type { z } from 'zod';
import type { therapistEarning } from '@fieldchart/schema/api';
import type { Db } from '../../db/database.ts';
import type { Clock } from '../../clock.ts';
import { type ClinicianSettings, type ClinicianSettingsService } from '../clinician-settings.ts';
import { localDate } from '@fieldchart/schema/rules';
import { loadVisitFacts, type VisitFact } from './visit-facts.ts';
import { round, weekStart } from '@fieldchart/schema/rules';

type Period = z.infer<typeof therapistEarning>['this_week'];

/**
 * Miles reimbursed for a visit: its travel miles when recorded (onsite miles are part of the
 * visit, not a trip), otherwise its total miles (without a split every recorded mile is taken
 * as driving to the patient).
 */
export function reimbursableMiles(v: Pick<VisitFact, 'totalMiles' | 'travelMiles'>): number {
  return v.travelMiles ?? v.totalMiles ?? 0;
}

/** Earnings of the completed visits in `facts` dated in [from, to]. */
export function earningsFor(facts: readonly VisitFact[], from: string, to: string, s: ClinicianSettings): Period {
  const earned = facts.filter((v) => v.status === 'completed' && v.visitDate >= from && v.visitDate <= to);
  const byType = new Map<string, number>();
  for (const v of earned) byType.set(v.visitType, (byType.get(v.visitType) ?? 0) + 1);
  const by_visit_type = [...byType.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([visit_type, visits]) => {
      const rate = s.pay_rates[visit_type] ?? 0;
      return { visit_type, visits, rate, amount: round(rate * visits) };
    });
  const visit_pay = round(by_visit_type.reduce((sum, t) => sum + t.amount, 0));
  const miles = round(earned.reduce((sum, v) => sum + reimbursableMiles(v), 0));
  const mileage_reimbursement = round(miles * s.mileage_rate);
  return {
    from,
    to,
    completed_visits: earned.length,
    visit_pay,
    reimbursable_miles: miles,
    mileage_reimbursement,
    total: round(visit_pay + mileage_reimbursement),
    by_visit_type,
  };
}

export function createEarnings(deps: { db: Db; clock: Clock; settings: ClinicianSettingsService }) {
  const { db, clock, settings } = deps;
  return {
    async therapistEarning(userId: string): Promise<z.infer<typeof therapistEarning>> {
      const s = await settings.get(userId);
      const today = localDate(clock.now(), s.time_zone);
      const monday = weekStart(today);
      const monthStart = `${today.slice(0, 8)}01`;
      const yearStart = `${today.slice(0, 4)}-01-01`;
      const from = monday < yearStart ? monday : yearStart;
      // Periods end today: a visit dated later has not been earned yet even if marked completed.
      const facts = await loadVisitFacts(db, { owner: { userId }, from, to: today });
      return {
        currency: 'USD',
        mileage_rate: s.mileage_rate,
        pay_rates: s.pay_rates,
        this_week: earningsFor(facts, monday, today, s),
        this_month: earningsFor(facts, monthStart, today, s),
        year_to_date: earningsFor(facts, yearStart, today, s),
      };
    },
  };
}
