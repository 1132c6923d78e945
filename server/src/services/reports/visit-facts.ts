import { and, asc, eq, gte, inArray, isNull, lte, sql, type SQL } from 'drizzle-orm';
import { patients, soapNotes, visitMileage, visits } from '@fieldchart/schema/db';
import type { Db } from '../../db/database.ts';
import type { PhiCrypto } from '../../security/phi-crypto.ts';
import { zonedInstant } from '@fieldchart/schema/rules';

/*
 * The facts every report reads: a visit with its SOAP note's bookkeeping columns (never the
 * note text) and its mileage. Soft-deleted rows (sync tombstones) never count.
 */

/** Hours after arrival (or the scheduled start) within which a note is on time. */
export const DOCUMENTATION_DUE_HOURS = 24;

export interface VisitFact {
  readonly id: string;
  readonly ownerId: string;
  readonly patientId: string | null;
  readonly visitDate: string;
  readonly startTime: string;
  readonly status: string;
  readonly visitType: string;
  readonly aiAssisted: boolean;
  readonly arrivedAt: Date | null;
  readonly completedAt: Date | null;
  readonly driveSeconds: number | null;
  readonly onsiteSeconds: number | null;
  readonly documentationSeconds: number | null;
  readonly noteId: string | null;
  readonly noteSubmittedAt: Date | null;
  readonly noteSignedAt: Date | null;
  readonly vitalFlags: string[] | null;
  readonly reviewFlags: string[] | null;
  readonly totalMiles: number | null;
  readonly travelMiles: number | null;
  readonly onsiteMiles: number | null;
}

const factColumns = {
  id: visits.id,
  ownerId: visits.ownerId,
  patientId: visits.patientId,
  visitDate: visits.visitDate,
  startTime: visits.startTime,
  status: visits.status,
  visitType: visits.visitType,
  aiAssisted: visits.aiAssisted,
  arrivedAt: visits.arrivedAt,
  completedAt: visits.completedAt,
  driveSeconds: visits.driveSeconds,
  onsiteSeconds: visits.onsiteSeconds,
  documentationSeconds: visits.documentationSeconds,
  noteId: soapNotes.id,
  noteSubmittedAt: soapNotes.submittedAt,
  noteSignedAt: soapNotes.signedAt,
  vitalFlags: soapNotes.vitalFlags,
  reviewFlags: soapNotes.reviewFlags,
  totalMiles: visitMileage.totalMiles,
  travelMiles: visitMileage.travelMiles,
  onsiteMiles: visitMileage.onsiteMiles,
};

export interface FactFilter {
  /** The clinician, or the visits recorded under an organization (`visits.organization_id`). */
  readonly owner: { userId: string } | { organizationId: string };
  readonly from?: string;
  readonly to?: string;
  readonly where?: SQL;
}

/** Visits of one owner (or organization) dated in [from, to], ordered by date and start time. */
export async function loadVisitFacts(db: Db, filter: FactFilter): Promise<VisitFact[]> {
  // An organization's visits are those recorded under it (scheduling stamps the seat's
  // organization): not every visit its current members ever made, which would count a new
  // member's work for other tenants and drop the visits of members who left.
  const ownerCond =
    'userId' in filter.owner ? eq(visits.ownerId, filter.owner.userId) : eq(visits.organizationId, filter.owner.organizationId);
  const rows = await db
    .select(factColumns)
    .from(visits)
    .leftJoin(soapNotes, and(eq(soapNotes.visitId, visits.id), isNull(soapNotes.deletedAt)))
    .leftJoin(visitMileage, and(eq(visitMileage.visitId, visits.id), isNull(visitMileage.deletedAt)))
    .where(
      and(
        ownerCond,
        isNull(visits.deletedAt),
        filter.from ? gte(visits.visitDate, filter.from) : undefined,
        filter.to ? lte(visits.visitDate, filter.to) : undefined,
        filter.where,
      ),
    )
    .orderBy(asc(visits.visitDate), asc(visits.startTime), asc(visits.id));
  return rows.map((r) => ({
    ...r,
    totalMiles: r.totalMiles === null ? null : Number(r.totalMiles),
    travelMiles: r.travelMiles === null ? null : Number(r.travelMiles),
    onsiteMiles: r.onsiteMiles === null ? null : Number(r.onsiteMiles),
  }));
}

/** Candidates for problem notes: undocumented after arrival, unsigned, or with review flags. */
export const problemCandidate: SQL = sql`(
  (${soapNotes.id} is null and (${visits.arrivedAt} is not null or ${visits.status} = 'completed'))
  or (${soapNotes.id} is not null and ${soapNotes.signedAt} is null)
  or (${soapNotes.id} is not null and cardinality(${soapNotes.reviewFlags}) > 0)
) and ${visits.status} <> 'cancelled'`;

/** When the note was due: DOCUMENTATION_DUE_HOURS after arrival, else after the scheduled start. */
export function documentationDueAt(v: Pick<VisitFact, 'arrivedAt' | 'visitDate' | 'startTime'>, timeZone: string): Date {
  const anchor = v.arrivedAt ?? zonedInstant(v.visitDate, v.startTime, timeZone);
  return new Date(anchor.getTime() + DOCUMENTATION_DUE_HOURS * 3600_000);
}

export type PatientBrief = { uuid: string; first_name: string; last_name: string } | null;

/** Patient names for the given ids, decrypted (a PHI read: call inside an audited operation). */
export async function patientBriefs(
  db: Db,
  phi: PhiCrypto,
  ownerId: string,
  ids: ReadonlyArray<string | null>,
): Promise<Map<string, PatientBrief>> {
  const wanted = [...new Set(ids.filter((id): id is string => id !== null))];
  const out = new Map<string, PatientBrief>();
  if (wanted.length === 0) return out;
  const rows = await db
    .select({ id: patients.id, first: patients.firstNameEnc, last: patients.lastNameEnc })
    .from(patients)
    .where(and(inArray(patients.id, wanted), eq(patients.ownerId, ownerId)));
  for (const p of rows) {
    out.set(p.id, {
      uuid: p.id,
      first_name: phi.open(p.first, 'patients', 'first_name_enc', p.id) ?? '',
      last_name: phi.open(p.last, 'patients', 'last_name_enc', p.id) ?? '',
    });
  }
  return out;
}

export function average(values: readonly number[]): number | null {
  return values.length === 0 ? null : values.reduce((a, b) => a + b, 0) / values.length;
}

export function median(values: readonly number[]): number | null {
  if (values.length === 0) return null;
  const s = [...values].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}
