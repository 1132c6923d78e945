import type { Config } from '../../config.ts';
import type { Clock } from '../../clock.ts';
import type { Db } from '../../db/database.ts';
import type { Sessions } from '../auth/sessions.ts';
import type { MailOutbox } from '../mail/mail-outbox.ts';
import type { NotificationsService } from '../notifications/notifications.ts';
import type { Throttle } from '../throttle.ts';
import { createClaims } from './claims.ts';
import { createFeatures } from './features.ts';
import { createInvitationSignup } from './invitation-signup.ts';
import { createInvitations } from './invitations.ts';
import { createOrganizationMailCap } from './mail-cap.ts';
import { createJoinRequests } from './join-requests.ts';
import { createMembership } from './membership.ts';
import { createOrganizationOperator } from './operator.ts';
import { createOrganizations } from './organizations.ts';

/** The organization area's services, wired together; spread into the app's service map. */
export function createOrganizationServices(deps: {
  db: Db;
  clock: Clock;
  config: Config;
  sessions: Sessions;
  throttle: Throttle;
  mail: MailOutbox;
  notifications: NotificationsService;
}) {
  const { db, clock, config, mail } = deps;
  const membership = createMembership({ db, clock });
  const mailCap = createOrganizationMailCap({ throttle: deps.throttle, perSenderPerHour: config.limits.organizationMailsPerUserPerHour });
  return {
    organizations: createOrganizations({ db, clock }),
    membership,
    joinRequests: createJoinRequests({ db, clock, mail, membership, notifications: deps.notifications }),
    invitations: createInvitations({ db, clock, config, mail, membership, notifications: deps.notifications, mailCap }),
    invitationSignup: createInvitationSignup({ ...deps, membership }),
    claims: createClaims({ db, clock, config, mail, membership, mailCap }),
    features: createFeatures({ db, clock }),
    organizationOperator: createOrganizationOperator({ db, clock, mail, membership }),
  };
}
