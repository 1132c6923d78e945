import type { JobHandler } from './worker.ts';

export const sendMail: JobHandler<'send_mail'> = async (services, payload) => {
  await services.mail.deliver(payload.mail_id);
};
