import { randomUUID } from 'node:crypto';
import { and, arrayContains, desc, eq, isNull, or, sql } from 'drizzle-orm';
import type { z } from 'zod';
import type { patientCreateBody, patientListQuery, patientUpdateBody } from '@fieldchart/schema/api';
import { patientReferrals, patients } from '@fieldchart/schema/db';
import type { Db } from '../../db/database.ts';
import { runPrepared } from '../../db/one-statement.ts';
import type { Clock } from '../../clock.ts';
import { Conflict, NotFound } from '../../errors.ts';
import type { ClinicianContext } from '../../http/audit-context.ts';
import type { PhiCrypto } from '../../security/phi-crypto.ts';
import { normaliseName } from '../../security/phi-keyring.ts';
import type { AuditLog } from '../audit/audit-log.ts';
import { localDate } from '@fieldchart/schema/rules';
import { isUuid } from '../ids.ts';
import { openPatient, sealPatient, type PatientPhi, type PatientRow, type ReferralRow } from './patient-codec.ts';
import { createdFields, newPatientRows } from './new-patient.ts';
import { countInt, lastVisitDatesOf, nextVisitsOf, openReferralsOf, ownedPatient, timeZoneOf, visitBriefOf, type VisitRow } from './patient-queries.ts';

export const patientNotFound = () => new NotFound('Patient not found', 'patient_not_found');

interface Extras {
  readonly referral: ReferralRow | undefined;
  readonly next: VisitRow | undefined;
  readonly last: string | undefined;
}

export function patientRecord(phi: PhiCrypto, row: PatientRow, x: Extras) {
  const p = openPatient(phi, row);
  return {
    uuid: row.id,
    referral_uuid: x.referral?.id ?? null,
    ...p,
    full_name: `${p.first_name} ${p.last_name}`.trim(),
    discipline: x.referral?.discipline ?? null,
    next_visit: x.next ? visitBriefOf(x.next) : null,
    last_visit_date: x.last ?? null,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  };
}
export type PatientRecord = ReturnType<typeof patientRecord>;

/** Patient records for rows of one owner, with their open referral and visits, in row order. */
export async function patientRecords(tx: Db, phi: PhiCrypto, ownerId: string, rows: PatientRow[], now: Date): Promise<PatientRecord[]> {
  const ids = rows.map((r) => r.id);
  const today = localDate(now, await timeZoneOf(tx, ownerId));
  const [referrals, next, last] = [await openReferralsOf(tx, ids), await nextVisitsOf(tx, ownerId, ids, today), await lastVisitDatesOf(tx, ownerId, ids)];
  return rows.map((r) => patientRecord(phi, r, { referral: referrals.get(r.id), next: next.get(r.id), last: last.get(r.id) }));
}

/**
 * The words a search term looks for. The blind index holds prefixes of two characters and
 * more, so one-letter words are dropped when longer ones are present ("mary j" looks for
 * "mary"); a term of one-letter words only matches one-letter name words.
 */
export function searchWords(term: string): string[] {
  const words = normaliseName(term);
  const usable = words.filter((w) => w.length >= 2);
  return usable.length > 0 ? usable : words;
}

type CreateBody = z.output<typeof patientCreateBody>;
type UpdateBody = z.output<typeof patientUpdateBody>;
type ListQuery = z.output<typeof patientListQuery>;

/** Create, update and list: the patient records themselves. Every call is audited. */
export function createPatientRecords(deps: { db: Db; clock: Clock; phi: PhiCrypto; audit: AuditLog }) {
  const { clock, phi, audit } = deps;

  return {
    /**
     * Creates the patient and opens its referral in one transaction. A device creating it
     * offline names the ids itself (the sync channel); a taken id is 409, never a 500.
     */
    async create(
      ctx: ClinicianContext,
      body: CreateBody,
      ids: { uuid?: string | undefined; referral_uuid?: string | undefined } = {},
    ): Promise<{ uuid: string; referral_uuid: string }> {
      const fields = createdFields(body);
      const id = ids.uuid ?? randomUUID();
      const referralId = ids.referral_uuid ?? randomUUID();
      const entry = { action: 'create', resourceType: 'patient', resourceId: id, details: { fields, referral_uuid: referralId } } as const;
      const rows = (tx: Db, now: Date) => {
        const r = newPatientRows(phi, ctx, { id, referralId }, body, now);
        return { patient: tx.insert(patients).values(r.patient), referral: tx.insert(patientReferrals).values(r.referral) };
      };
      if (id === referralId || ids.uuid || ids.referral_uuid) {
        // Ids a device named itself are checked first, in a transaction with the inserts.
        return audit.around(ctx, { action: 'create', resourceType: 'patient', details: { fields } }, async (tx, note) => {
          if (id === referralId) throw new Conflict('The patient and referral ids must differ', 'id_taken');
          await requireFreeIds(tx, id, referralId);
          const { patient, referral } = rows(tx, clock.now());
          await patient;
          await referral;
          note({ resourceId: id, details: { referral_uuid: referralId } });
          return { uuid: id, referral_uuid: referralId };
        });
      }
      // New ids: the patient, its referral and the audit row in one statement (atomic, one round trip).
      try {
        const { patient, referral } = rows(deps.db, clock.now());
        await runPrepared(deps.db, 'patient_create', sql`with p as ${patient}, r as ${referral}, audit as (${audit.insertFor(ctx, entry, 'success')}) select 1 as done`);
      } catch (err) {
        await audit.failed(ctx, entry, err);
        throw err;
      }
      return { uuid: id, referral_uuid: referralId };
    },

    /** Changes the given fields (null clears an optional one); names are re-tokenised. */
    async update(ctx: ClinicianContext, uuid: string, body: UpdateBody): Promise<void> {
      const fields = Object.keys(body).filter((k) => body[k as keyof UpdateBody] !== undefined);
      await audit.around(ctx, { action: 'update', resourceType: 'patient', resourceId: uuid, details: { fields } }, async (tx) => {
        const row = isUuid(uuid) ? await ownedPatient(tx, ctx.actorUserId, uuid, true) : null;
        if (!row) throw patientNotFound();
        const current = openPatient(phi, row);
        const next: PatientPhi = {
          first_name: body.first_name ?? current.first_name,
          last_name: body.last_name ?? current.last_name,
          email: body.email === undefined ? current.email : body.email,
          phone: body.phone === undefined ? current.phone : body.phone,
          address: body.address === undefined ? current.address : body.address,
        };
        await tx
          .update(patients)
          .set({ ...sealPatient(phi, row.id, next), updatedAt: clock.now() })
          .where(eq(patients.id, row.id));
      });
    },

    /**
     * The caller's patients, newest first (names are encrypted, so the database cannot sort
     * by them; creation order is stable across pages). `search_by_name`: every word of the
     * term must be the start of a word of the first or last name, case and accents ignored.
     */
    async list(ctx: ClinicianContext, query: ListQuery) {
      const { page, per_page } = query;
      const term = query.search_by_name?.trim() ?? '';
      const details = { page, per_page, searched: term.length > 0 };
      return audit.around(ctx, { action: 'list', resourceType: 'patient', details }, async (tx, note) => {
        const words = term ? searchWords(term) : [];
        const where = and(
          eq(patients.ownerId, ctx.actorUserId),
          isNull(patients.deletedAt),
          // One set of tokens per index key in the ring: during a key rotation a row's tokens are under the old key or the new.
          words.length > 0 ? or(...phi.ring().searchTokenSets(words.join(' ')).map((tokens) => arrayContains(patients.nameSearch, tokens))) : undefined,
        );
        const [counted] = await tx.select({ n: countInt }).from(patients).where(where);
        const total = counted?.n ?? 0;
        const rows = await tx
          .select()
          .from(patients)
          .where(where)
          .orderBy(desc(patients.createdAt), desc(patients.id))
          .limit(per_page)
          .offset((page - 1) * per_page);
        const data = await patientRecords(tx, phi, ctx.actorUserId, rows, clock.now());
        note({ details: { count: data.length, total } });
        return {
          data,
          meta: { current_page: page, per_page, total, last_page: Math.max(1, Math.ceil(total / per_page)) },
        };
      });
    },
  };
}

async function requireFreeIds(tx: Db, patientId: string, referralId: string): Promise<void> {
  const [p] = await tx.select({ id: patients.id }).from(patients).where(eq(patients.id, patientId));
  const [r] = await tx.select({ id: patientReferrals.id }).from(patientReferrals).where(eq(patientReferrals.id, referralId));
  // The same answer whoever holds the id: nothing tells the caller whose it is.
  if (p || r) throw new Conflict('That id is already in use', 'id_taken');
}
