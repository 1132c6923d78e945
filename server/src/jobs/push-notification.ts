import type { JobHandler } from './job-handler.ts';

/** Fans a recorded notification out to one push_send job per device token. */
export const pushNotification: JobHandler<'push_notification'> = async (services, payload) => {
  await services.push.fanOut(payload.notification_id);
};

/** Sends one notification to one device; a transient FCM failure, or the stop's abort, throws and is retried. */
export const pushSend: JobHandler<'push_send'> = async (services, payload, run) => {
  await services.push.sendOne(payload.notification_id, payload.token_id, run.signal);
};
