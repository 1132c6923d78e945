import type { Db } from '../../db/database.ts';
import { TooMany } from '../../errors.ts';
import type { Throttle } from '../throttle.ts';

const HOUR = 3600;

/**
 * Invitation and claim mails go to addresses the sender types in: a cap per sender and hour
 * keeps an account from turning Fieldchart into a mailer. Counted in the caller's
 * transaction, so a refused or failed invitation does not use the budget.
 */
export function createOrganizationMailCap(deps: { throttle: Throttle; perSenderPerHour: number }) {
  return async (tx: Db, senderId: string): Promise<void> => {
    const sent = await deps.throttle.hit(tx, ['organization-mail', senderId], HOUR);
    if (sent.hits > deps.perSenderPerHour) {
      throw new TooMany('Too many invitations sent in the last hour; try again later', sent.retryAfterSeconds, 'too_many_attempts');
    }
  };
}

export type OrganizationMailCap = ReturnType<typeof createOrganizationMailCap>;
