import type { JobHandler } from './job-handler.ts';

export const sendMail: JobHandler<'send_mail'> = async (services, payload, run) => {
  await services.mail.deliver(payload.mail_id, run.signal);
};
