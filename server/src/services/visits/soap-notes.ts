/**
 * SOAP submission: the note completes the visit. A completed visit's note is a signed
 * clinical record, so a second submission is 409 (an addendum flow is not part of this API);
 * a retry with the same Idempotency-Key replays the first answer instead.
 */
import { eq } from 'drizzle-orm';
import type * as z from 'zod';
import type { soapNoteBody } from '@fieldchart/schema/api';
import { soapNotes, visits } from '@fieldchart/schema/db';
import type { Clock } from '../../clock.ts';
import { Conflict } from '../../errors.ts';
import type { PhiCrypto } from '../../security/phi-crypto.ts';
import type { AuditContext, AuditLog } from '../audit/audit-log.ts';
import { parseSignature } from './signature.ts';
import { normalizeVitals } from './vital-signs.ts';
import { findOwnedVisit } from './visit-records.ts';
import { discardDraft } from '../sync/drafts-store.ts';

export type SoapSubmission = z.infer<typeof soapNoteBody>;

export function createSoapNotes(deps: { clock: Clock; phi: PhiCrypto; audit: AuditLog }) {
  const { clock, phi, audit } = deps;

  return {
    async submit(ctx: AuditContext, ownerId: string, input: SoapSubmission): Promise<{ vital_flags: string[]; signed: boolean }> {
      const id = crypto.randomUUID();
      return audit.around(ctx, { action: 'create', resourceType: 'soap_note', resourceId: id }, async (tx, note) => {
        const visit = await findOwnedVisit(tx, ownerId, input.schedule_uuid, { forUpdate: true });
        note({ details: { visit_id: visit.id } });
        if (visit.status === 'cancelled') throw new Conflict('A cancelled visit cannot be documented', 'visit_cancelled');
        const [existing] = await tx.select({ id: soapNotes.id }).from(soapNotes).where(eq(soapNotes.visitId, visit.id));
        if (existing || visit.status === 'completed') throw new Conflict('This visit already has a submitted note', 'note_already_submitted');

        // Never a reason to refuse the note: normalised, bounded and flagged (vital-signs.ts).
        const { vitals, vitalFlags: flags, reviewFlags } = normalizeVitals(input.vital_signs);
        const signature = input.signature ? parseSignature(input.signature) : null;
        const now = clock.now();
        const seal = (value: string | null, column: string) => phi.seal(value, 'soap_notes', column, id);
        await tx.insert(soapNotes).values({
          id,
          visitId: visit.id,
          ownerId,
          subjectiveEnc: seal(input.subjective, 'subjective_enc') as string,
          objectiveEnc: seal(input.objective, 'objective_enc') as string,
          assessmentEnc: seal(input.assessment, 'assessment_enc') as string,
          planEnc: seal(input.plan, 'plan_enc') as string,
          vitalSignsEnc: vitals ? seal(JSON.stringify(vitals), 'vital_signs_enc') : null,
          vitalFlags: flags,
          reviewFlags,
          signatureEnc: signature ? seal(signature.bytes.toString('base64'), 'signature_enc') : null,
          signatureMime: signature?.mime ?? null,
          signedAt: signature ? now : null,
          submittedAt: now,
          createdAt: now,
          updatedAt: now,
        });
        await tx.update(visits).set({ status: 'completed', completedAt: now, updatedAt: now }).where(eq(visits.id, visit.id));
        await discardDraft(tx, visit.id);
        note({ details: { vital_flags: flags.length, review_flags: reviewFlags.length, signed: signature !== null } });
        return { vital_flags: flags, signed: signature !== null };
      });
    },
  };
}
