/**
 * `fieldchart seed --demo`: a clinician with three weeks of visits (two past weeks, today,
 * the coming days), written through the real patient and visit services so PHI is sealed,
 * every write is audited and the EVV record is derived from real timer events. The visit
 * services run on a replay clock set to each simulated moment (a note is submitted when the
 * visit ended, not when the seed ran); the audit trail keeps the real time.
 *
 * Idempotent: the account is found by its email, patients by name, visits by date and start
 * time; what exists is left alone. Run on a later day it adds that day's window.
 */
import { and, eq, isNull } from 'drizzle-orm';
import { soapNotes, visits } from '@fieldchart/schema/db';
import type { Clock } from '../../clock.ts';
import type { Db } from '../../db/database.ts';
import { NotFound } from '../../errors.ts';
import { noProgress, type Progress } from '../../progress.ts';
import type { ClinicianContext } from '../../http/audit-context.ts';
import type { PhiCrypto } from '../../security/phi-crypto.ts';
import type { AuditLog } from '../audit/audit-log.ts';
import type { Accounts } from '../auth/accounts.ts';
import { type ClinicianSettingsService } from '../clinician-settings.ts';
import { localDate, zonedInstant } from '@fieldchart/schema/rules';
import type { Patients } from '../patients/index.ts';
import { addDays } from '@fieldchart/schema/rules';
import type { Users } from '../users/users.ts';
import { createVisitServices } from '../visits/index.ts';
import {
  ASSESSMENT,
  DAY_SLOTS,
  DEMO_EMAIL,
  DEMO_PASSWORD,
  DEMO_PATIENTS,
  DEMO_SIGNATURE,
  DEMO_TIME_ZONE,
  OBJECTIVE,
  PLAN,
  prng,
  SUBJECTIVE,
  type DemoPatient,
} from './demo-data.ts';

export const PAST_DAYS = 14;
export const AHEAD_DAYS = 6;
const HOME_BASE = { lat: 39.98, lng: -83.0 };

export interface DemoSeedResult {
  readonly email: string;
  readonly password: string;
  readonly user_uuid: string;
  readonly account_created: boolean;
  readonly time_zone: string;
  readonly today: string;
  readonly patients: { readonly created: number; readonly total: number };
  readonly visits: { readonly created: number; readonly total: number; readonly today: number; readonly completed: number; readonly upcoming: number };
}

interface PlannedVisit {
  readonly date: string;
  readonly start: string;
  readonly patient: number;
}

function hash(s: string): number {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
  return h >>> 0;
}

/** The window's visits: each patient on their weekdays; today always has visits, weekend or not. */
export function planVisits(today: string): PlannedVisit[] {
  const out: PlannedVisit[] = [];
  for (let offset = -PAST_DAYS; offset <= AHEAD_DAYS; offset++) {
    const date = addDays(today, offset);
    let weekday = new Date(`${date}T00:00:00Z`).getUTCDay();
    if (offset === 0 && (weekday === 0 || weekday === 6)) weekday = 1;
    const seen = DEMO_PATIENTS.map((p, i) => ({ p, i })).filter(({ p }) => p.days.includes(weekday));
    seen.slice(0, DAY_SLOTS.length).forEach(({ i }, slot) => out.push({ date, start: DAY_SLOTS[slot] as string, patient: i }));
  }
  return out;
}

const jitter = (rnd: () => number, lat: number, lng: number) => ({
  latitude: Math.round((lat + (rnd() - 0.5) * 0.0006) * 1e6) / 1e6,
  longitude: Math.round((lng + (rnd() - 0.5) * 0.0006) * 1e6) / 1e6,
  accuracy: Math.round(5 + rnd() * 15),
});

const pick = <T>(rnd: () => number, list: readonly T[]): T => list[Math.floor(rnd() * list.length)] as T;

export function createDemoSeed(deps: { db: Db; clock: Clock; phi: PhiCrypto; audit: AuditLog; settings: ClinicianSettingsService }) {
  const { db, clock, settings } = deps;
  let simulated = clock.now();
  const replay: Clock = { now: () => simulated };
  const visitServices = createVisitServices({ ...deps, clock: replay });

  async function demoAccount(services: { accounts: Accounts; users: Users }): Promise<{ id: string; created: boolean }> {
    const existing = await services.users.lookup(DEMO_EMAIL).catch((err: unknown) => {
      if (err instanceof NotFound) return null;
      throw err;
    });
    if (existing) return { id: existing.uuid, created: false };
    const registered = await services.accounts.register({ first_name: 'Jordan', last_name: 'Avery', email: DEMO_EMAIL, password: DEMO_PASSWORD });
    await services.users.completeOnboarding(registered.user.uuid, { discipline: 'PT', license_number: 'PT.012345', license_state: 'OH' });
    return { id: registered.user.uuid, created: true };
  }

  async function demoPatients(ctx: ClinicianContext, patients: Patients, today: string, progress: Progress): Promise<{ ids: string[]; created: number }> {
    const listed = await patients.list(ctx, { page: 1, per_page: 100 });
    const byName = new Map(listed.data.map((p) => [`${p.first_name} ${p.last_name}`, p.uuid]));
    let created = 0;
    const ids: string[] = [];
    for (const [i, p] of DEMO_PATIENTS.entries()) {
      let id = byName.get(`${p.first} ${p.last}`);
      if (!id) {
        id = (
          await patients.create(ctx, {
            first_name: p.first,
            last_name: p.last,
            phone: p.phone,
            address: p.address,
            referral: {
              discipline: 'PT',
              diagnosis_codes: [...p.diagnosis],
              referral_source: p.source,
              start_of_care: addDays(today, -PAST_DAYS - 3 - (i % 5)),
              ordered_frequency: p.frequency,
            },
          })
        ).uuid;
        created++;
      }
      ids.push(id);
      progress({ step: 'patients', done: ids.length, total: DEMO_PATIENTS.length });
    }
    return { ids, created };
  }

  /** Drive, visit, document, sign and log mileage, each at its simulated moment. */
  async function carryOut(ctx: ClinicianContext, ownerId: string, visitId: string, v: PlannedVisit, p: DemoPatient, rnd: () => number, opts: { lateNote: boolean; finish: boolean }) {
    const start = zonedInstant(v.date, v.start, DEMO_TIME_ZONE);
    const driveMin = 8 + Math.round(rnd() * 16);
    const onsiteMin = 35 + Math.round(rnd() * 15);
    const ai = rnd() < 0.45;
    const docMin = ai ? 5 + Math.round(rnd() * 5) : 14 + Math.round(rnd() * 12);
    const at = (min: number) => new Date(start.getTime() + min * 60_000);
    const here = jitter(rnd, p.lat, p.lng);
    const events = [
      { event_type: 'start_travel' as const, event_time: at(-driveMin).toISOString(), ...jitter(rnd, HOME_BASE.lat, HOME_BASE.lng) },
      { event_type: 'arrive' as const, event_time: start.toISOString(), ...here },
      ...(opts.finish
        ? [
            { event_type: 'start_documentation' as const, event_time: at(onsiteMin).toISOString(), ...here },
            { event_type: 'complete' as const, event_time: at(onsiteMin + docMin).toISOString(), ...jitter(rnd, p.lat, p.lng) },
          ]
        : []),
    ];
    simulated = at(opts.finish ? onsiteMin + docMin : 0);
    await visitServices.visitTimer.record(ctx, ownerId, { schedule_uuid: visitId, events });
    if (!opts.finish) return;

    const abnormal = p.diagnosis.some((d) => d.startsWith('I50') || d.startsWith('I10')) && rnd() < 0.5;
    const signed = rnd() > 0.08;
    simulated = opts.lateNote ? zonedInstant(addDays(v.date, 1), '19:30', DEMO_TIME_ZONE) : at(onsiteMin + docMin);
    await visitServices.soapNotes.submit(ctx, ownerId, {
      schedule_uuid: visitId,
      subjective: pick(rnd, SUBJECTIVE),
      objective: pick(rnd, OBJECTIVE),
      assessment: pick(rnd, ASSESSMENT),
      plan: pick(rnd, PLAN),
      vital_signs: {
        systolic_bp: abnormal ? 162 : 118 + Math.round(rnd() * 16),
        diastolic_bp: abnormal ? 96 : 70 + Math.round(rnd() * 12),
        heart_rate: 64 + Math.round(rnd() * 18),
        respiratory_rate: 14 + Math.round(rnd() * 4),
        oxygen_saturation: 94 + Math.round(rnd() * 4),
        temperature_f: 97.8 + Math.round(rnd() * 10) / 10,
        pain_level: Math.round(rnd() * 5),
      },
      ...(signed ? { signature: DEMO_SIGNATURE } : {}),
    });
    // The AI pipeline marks its drafts; it is not part of this seed, so the flag is set here.
    if (ai) await db.update(visits).set({ aiAssisted: true }).where(eq(visits.id, visitId));
    // Likewise its review items: some AI drafts leave one for the clinician to resolve.
    if (ai && rnd() < 0.15) await db.update(soapNotes).set({ reviewFlags: ['medication_list_unverified'] }).where(eq(soapNotes.visitId, visitId));

    const roll = rnd();
    if (roll < 0.05) return; // forgot to log mileage: the dashboard's missing_mileage alert
    const travel = Math.round((2 + driveMin * 0.45 + rnd() * 2) * 10) / 10;
    const onsite = rnd() < 0.3 ? Math.round(rnd() * 15) / 10 : 0;
    simulated = at(onsiteMin + docMin + 2);
    await visitServices.visitMileage.put(
      ctx,
      ownerId,
      visitId,
      roll < 0.2 ? { total_miles: Math.round((travel + onsite) * 10) / 10 } : { total_miles: Math.round((travel + onsite) * 10) / 10, travel_miles: travel, onsite_miles: onsite },
    );
  }

  return {
    async run(services: { accounts: Accounts; users: Users; patients: Patients }, progress: Progress = noProgress): Promise<DemoSeedResult> {
      const account = await demoAccount(services);
      await settings.update(account.id, { time_zone: DEMO_TIME_ZONE });
      const now = clock.now();
      const today = localDate(now, DEMO_TIME_ZONE);
      const ctx: ClinicianContext = { actorUserId: account.id, organizationId: null, requestId: 'seed-demo' };
      const patientIds = await demoPatients(ctx, services.patients, today, progress);

      const existing = await db
        .select({ date: visits.visitDate, start: visits.startTime })
        .from(visits)
        .where(and(eq(visits.ownerId, account.id), isNull(visits.deletedAt)));
      const have = new Set(existing.map((e) => `${e.date} ${e.start}`));
      const plan = planVisits(today);
      // One visit two or more days back is left undocumented after arrival: a late note.
      const lateCandidate = plan.filter((v) => v.date <= addDays(today, -2)).at(-1);
      let created = 0;
      for (const [i, v] of plan.entries()) {
        progress({ step: 'visits', done: i, total: plan.length });
        if (have.has(`${v.date} ${v.start}`)) continue;
        const p = DEMO_PATIENTS[v.patient] as DemoPatient;
        const rnd = prng(hash(`${v.date}|${v.start}`));
        const type = v.date === plan.find((x) => x.patient === v.patient)?.date && v.patient % 4 === 1 ? 'reassessment' : 'routine';
        simulated = zonedInstant(addDays(v.date < today ? v.date : today, -2), '16:00', DEMO_TIME_ZONE);
        if (simulated > now) simulated = now;
        const { uuid } = await visitServices.visitScheduling.schedule(ctx, account.id, {
          patient_uuid: patientIds.ids[v.patient] as string,
          visit_date: v.date,
          start_time: v.start,
          visit_type: type,
          notes: v.patient % 3 === 0 ? 'Call caregiver 15 minutes before arrival; side door.' : undefined,
        });
        created++;
        const ended = zonedInstant(v.date, v.start, DEMO_TIME_ZONE).getTime() + 75 * 60_000;
        if (ended < now.getTime()) {
          await carryOut(ctx, account.id, uuid, v, p, rnd, { lateNote: rnd() < 0.1, finish: v !== lateCandidate });
        }
      }
      progress({ step: 'visits', done: plan.length, total: plan.length });
      simulated = clock.now();

      const all = await db
        .select({ date: visits.visitDate, status: visits.status })
        .from(visits)
        .where(and(eq(visits.ownerId, account.id), isNull(visits.deletedAt)));
      return {
        email: DEMO_EMAIL,
        password: DEMO_PASSWORD,
        user_uuid: account.id,
        account_created: account.created,
        time_zone: DEMO_TIME_ZONE,
        today,
        patients: { created: patientIds.created, total: DEMO_PATIENTS.length },
        visits: {
          created,
          total: all.length,
          today: all.filter((v) => v.date === today).length,
          completed: all.filter((v) => v.status === 'completed').length,
          upcoming: all.filter((v) => v.date > today).length,
        },
      };
    },
  };
}

export type DemoSeed = ReturnType<typeof createDemoSeed>;
