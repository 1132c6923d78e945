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
