/**
 * The sync channel's mutations (docs/sync-protocol.md, Mutations): each is the REST endpoint's
 * service call with the same arguments — one set of rules for both ways in.
 */
import * as z from 'zod';
import { fieldErrorsFromIssues } from '@fieldchart/schema/rules';
import { MUTATION_ARGS, type MutationName } from '@fieldchart/schema/sync';
import type { Db } from '../../db/database.ts';
import { Invalid, type FieldErrors } from '../../errors.ts';
import type { ClinicianContext } from '../../http/audit-context.ts';
import type { Services } from '../index.ts';
import type { DraftSections } from './drafts-store.ts';
import { createMutationSetRunner, type MutationSetRunner } from './mutation-sets.ts';

export interface MutationDeps {
  readonly services: Services;
  /** The server's copy of a visit's draft sections (note.submit without texts). */
  sectionsOf(tx: Db, visitId: string, ownerId: string): Promise<DraftSections | null>;
}

export interface MutationRunner {
  /** One mutation through its REST service call. */
  (ctx: ClinicianContext, name: MutationName, args: unknown): Promise<unknown>;
  /**
   * Consecutive mutations of the kinds that can share a set, applied set-based with the same
   * rules (mutation-sets.ts); null when they must go one by one. Absent: always one by one.
   */
  readonly runSet?: MutationSetRunner;
}

export function createMutationRunner(deps: MutationDeps): MutationRunner {
  const { services } = deps;
  const parse = <N extends MutationName>(name: N, args: unknown): z.output<(typeof MUTATION_ARGS)[N]> => {
    const parsed = MUTATION_ARGS[name].safeParse(args);
    if (!parsed.success) throw validationError(parsed.error);
    return parsed.data as z.output<(typeof MUTATION_ARGS)[N]>;
  };

  const runOne = async (ctx: ClinicianContext, name: MutationName, args: unknown): Promise<unknown> => {
    const userId = ctx.actorUserId;
    switch (name) {
      case 'patient.create': {
        const { uuid, referral_uuid, ...body } = parse(name, args);
        return services.patients.create(ctx, body, { uuid, referral_uuid });
      }
      case 'patient.update': {
        const { uuid, ...body } = parse(name, args);
        await services.patients.update(ctx, uuid, body);
        return null;
      }
      case 'visit.schedule': {
        const { uuid, ...body } = parse(name, args);
        return services.visitScheduling.schedule(ctx, userId, body, uuid);
      }
      case 'visit.timer_events':
        return services.visitTimer.record(ctx, userId, parse(name, args));
      case 'visit.mileage': {
        const { uuid, mileage } = parse(name, args);
        const r = await services.visitMileage.put(ctx, userId, uuid, mileage);
        return { applied: r.applied };
      }
      case 'note.submit': {
        const input = parse(name, args);
        const draft = await deps.sectionsOf(services.unitOfWork.db, input.schedule_uuid, userId);
        const section = (key: keyof DraftSections) => input[key] ?? draft?.[key]?.trim() ?? '';
        // The same rules as REST: an empty section is 422 whether it came from args or the draft.
        const body = MUTATION_ARGS['note.submit'].required({ subjective: true, objective: true, assessment: true, plan: true }).safeParse({
          ...input,
          subjective: section('subjective'),
          objective: section('objective'),
          assessment: section('assessment'),
          plan: section('plan'),
        });
        if (!body.success) throw validationError(body.error);
        const r = await services.soapNotes.submit(ctx, userId, body.data);
        return { signed: r.signed, vital_flags: r.vital_flags };
      }
    }
  };
  return Object.assign(runOne, { runSet: createMutationSetRunner(services) });
}

function validationError(error: z.ZodError): Invalid {
  const errors: FieldErrors = fieldErrorsFromIssues(error.issues, { root: '_' });
  const first = Object.entries(errors)[0];
  return new Invalid(first ? `${first[0]} ${first[1][0]}` : 'Invalid mutation arguments', errors);
}
