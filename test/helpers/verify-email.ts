/**
 * Verifies an account's email the way a clinician does: asks for the code, reads it out of the
 * real message at the SMTP sink, and enters it.
 */
import assert from 'node:assert/strict';
import type { TestServer } from './test-server.ts';

export async function mailedVerificationCode(server: TestServer, email: string, after: number): Promise<string> {
  const mail = await server.mail.waitFor(email, (m) => server.mail.messages.indexOf(m) >= after && /verification code/i.test(m.subject));
  const match = /\b(\d{6})\b/.exec(mail.text);
  assert.ok(match?.[1], `no 6-digit code in the mail: ${mail.text}`);
  return match[1];
}

export async function verifyEmail(server: TestServer, user: { token: string; email: string }): Promise<void> {
  const mark = server.mail.messages.length;
  const sent = await server.api('POST', '/verify-email/send-otp', { token: user.token });
  assert.equal(sent.status, 200, JSON.stringify(sent.body));
  const otp = await mailedVerificationCode(server, user.email, mark);
  const verified = await server.api('POST', '/verify-email/verify', { token: user.token, body: { otp } });
  assert.equal(verified.status, 200, JSON.stringify(verified.body));
  assert.equal(verified.body.data.email_verified, true);
}
