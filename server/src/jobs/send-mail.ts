import type { JobHandler } from './job-handler.ts';

export const sendMail: JobHandler<'send_mail'> = async (services, payload) => {
  await services.mail.deliver(payload.mail_id);
};
