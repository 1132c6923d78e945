/** Plain-text mails. Each returns subject and body; none carries more PHI than it must. */
export interface MailContent {
  readonly kind: string;
  readonly subject: string;
  readonly text: string;
}

export function passwordResetCode(opts: { firstName: string; code: string; validMinutes: number }): MailContent {
  return {
    kind: 'password_reset_code',
    subject: `Your Fieldchart reset code: ${opts.code}`,
    text: [
      `Hi ${opts.firstName},`,
      '',
      `Your Fieldchart password reset code is ${opts.code}.`,
      `It is valid for ${opts.validMinutes} minutes and can be used once.`,
      '',
      "If you didn't ask to reset your password, you can ignore this email; your password stays the same.",
    ].join('\n'),
  };
}

export function passwordChanged(opts: { firstName: string }): MailContent {
  return {
    kind: 'password_changed',
    subject: 'Your Fieldchart password was changed',
    text: [
      `Hi ${opts.firstName},`,
      '',
      'The password of your Fieldchart account was just changed, and other devices were signed out.',
      "If this wasn't you, reset your password from the app right away.",
    ].join('\n'),
  };
}

// ---- Organizations ----------------------------------------------------------------------

const roleName = (role: string) => (role === 'admin' ? 'an admin' : 'a member');

/**
 * An admin's invitation. Without an account the mail carries the sign-up link
 * ({APP_URL}/invite/{token}); with one, the invitation waits in the app under Organization.
 */
export function organizationInvitation(opts: {
  firstName: string | null;
  organizationName: string;
  inviterName: string | null;
  role: string;
  link: string | null;
  validDays: number;
}): MailContent {
  const who = opts.inviterName ? `${opts.inviterName} invited you` : 'You were invited';
  return {
    kind: 'organization_invitation',
    subject: `Join ${opts.organizationName} on Fieldchart`,
    text: [
      `Hi${opts.firstName ? ` ${opts.firstName}` : ''},`,
      '',
      `${who} to join ${opts.organizationName} on Fieldchart as ${roleName(opts.role)}.`,
      '',
      ...(opts.link
        ? ['Create your account from this link:', opts.link, '', `The link works once and expires in ${opts.validDays} days.`]
        : [
            'Sign in to the Fieldchart app and open Organization to accept or decline it.',
            `The invitation expires in ${opts.validDays} days.`,
          ]),
      '',
      "If you weren't expecting this, you can ignore this email.",
    ].join('\n'),
  };
}

export function invitationCode(opts: { organizationName: string; code: string; validMinutes: number }): MailContent {
  return {
    kind: 'invitation_code',
    subject: `Your Fieldchart verification code: ${opts.code}`,
    text: [
      'Hi,',
      '',
      `Your code to create your Fieldchart account and join ${opts.organizationName} is ${opts.code}.`,
      `It is valid for ${opts.validMinutes} minutes and can be used once.`,
      '',
      "If you didn't ask for it, you can ignore this email.",
    ].join('\n'),
  };
}

/** To the contact of an organization a clinician invited to Fieldchart. */
export function organizationClaim(opts: {
  contactName: string | null;
  organizationName: string;
  inviterName: string;
  message: string | null;
  link: string;
  validDays: number;
}): MailContent {
  return {
    kind: 'organization_claim',
    subject: `${opts.inviterName} invited ${opts.organizationName} to Fieldchart`,
    text: [
      `Hi${opts.contactName ? ` ${opts.contactName}` : ''},`,
      '',
      `${opts.inviterName} uses Fieldchart for visit documentation and invited ${opts.organizationName} to join.`,
      ...(opts.message ? ['', 'Their message:', ...opts.message.split('\n').map((l) => `> ${l}`)] : []),
      '',
      'Claim the organization and become its admin from this link:',
      opts.link,
      '',
      `The link works once and expires in ${opts.validDays} days.`,
    ].join('\n'),
  };
}

export function claimCompletedForClaimer(opts: { firstName: string; organizationName: string }): MailContent {
  return {
    kind: 'organization_claim_completed',
    subject: `${opts.organizationName} is on Fieldchart`,
    text: [
      `Hi ${opts.firstName},`,
      '',
      `You claimed ${opts.organizationName}. It is now listed on Fieldchart and you are its admin:`,
      'you can invite clinicians, approve join requests and set its features in the app.',
    ].join('\n'),
  };
}

export function claimCompletedForInviter(opts: { firstName: string; organizationName: string; seated: boolean }): MailContent {
  return {
    kind: 'organization_claim_completed',
    subject: `${opts.organizationName} joined Fieldchart`,
    text: [
      `Hi ${opts.firstName},`,
      '',
      `${opts.organizationName}, which you invited, has claimed its place on Fieldchart.`,
      opts.seated
        ? 'You are now a member of it.'
        : 'You already belong to an organization, so your seat did not change; you can request to join from the app.',
    ].join('\n'),
  };
}

export function joinRequestApproved(opts: { firstName: string; organizationName: string }): MailContent {
  return {
    kind: 'join_request_approved',
    subject: `You joined ${opts.organizationName}`,
    text: [
      `Hi ${opts.firstName},`,
      '',
      `Your request to join ${opts.organizationName} on Fieldchart was approved. You are now a member.`,
    ].join('\n'),
  };
}

export function organizationApproved(opts: { firstName: string; organizationName: string; seatedAsAdmin: boolean }): MailContent {
  return {
    kind: 'organization_approved',
    subject: `${opts.organizationName} is approved on Fieldchart`,
    text: [
      `Hi ${opts.firstName},`,
      '',
      `The organization you requested, ${opts.organizationName}, is approved and now listed on Fieldchart.`,
      opts.seatedAsAdmin ? 'You are its admin.' : 'Clinicians can now find it and ask to join.',
    ].join('\n'),
  };
}

export function emailVerificationCode(opts: { firstName: string; code: string; validMinutes: number }): MailContent {
  return {
    kind: 'email_verification_code',
    subject: `Your Fieldchart verification code: ${opts.code}`,
    text: [
      `Hi ${opts.firstName},`,
      '',
      `Enter ${opts.code} in the app to confirm this is your email address.`,
      `It is valid for ${opts.validMinutes} minutes and can be used once.`,
      '',
      "If you didn't ask for it, you can ignore this email.",
    ].join('\n'),
  };
}
