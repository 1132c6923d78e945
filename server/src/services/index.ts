import type { Config } from '../config.ts';
import type { Clock } from '../clock.ts';
import type { Db } from '../db/database.ts';
import { createUnitOfWork } from '../db/unit-of-work.ts';
import type { MailTransport } from '../mail/transport.ts';
import { createAccessTokens } from '../security/access-tokens.ts';
import type { IdTokenVerifier } from '../security/id-token-verifier.ts';
import type { PhiCrypto } from '../security/phi-crypto.ts';
import type { SigningKeys } from '../security/signing-keys.ts';
import { createAiPipeline } from './ai/pipeline/index.ts';
import { createNoteGenerator } from './ai/notes/index.ts';
import { createSpeechToText } from './ai/stt/index.ts';
import { createAudio } from './audio/index.ts';
import { normaliseToPcm16kMono } from './audio/ffmpeg.ts';
import { createAiChecklists } from './ai/notes/checklist-service.ts';
import { createAuditExport } from './audit/audit-export.ts';
import { createAuditVerify } from './audit/audit-verify.ts';
import { createAuditLog } from './audit/audit-log.ts';
import { createClinicianSettings } from './clinician-settings.ts';
import { createAccounts } from './auth/accounts.ts';
import { createEmailVerification } from './auth/email-verification.ts';
import { createPasswordReset } from './auth/password-reset.ts';
import { createSessions } from './auth/sessions.ts';
import { createIdempotency } from './idempotency.ts';
import { createMaintenance } from './maintenance.ts';
import { createMessages } from './messages/messages.ts';
import { createFcmClient } from './notifications/fcm-client.ts';
import { createNotifications } from './notifications/notifications.ts';
import { createPush } from './notifications/push.ts';
import { createMailOutbox } from './mail/mail-outbox.ts';
import { createOrganizationServices } from './organizations/index.ts';
import { seatOf } from './organizations/seats.ts';
import { createPatients } from './patients/index.ts';
import { createPhiRotation } from './keys/phi-rotation.ts';
import { createReports } from './reports/index.ts';
import { createRoutingServices } from './routing/index.ts';
import { createDemoSeed } from './seed/demo-seed.ts';
import { createSubscriptions } from './subscriptions/index.ts';
import { createThrottle } from './throttle.ts';
import { createRequestRate } from './request-rate.ts';
import { createUsers } from './users/users.ts';
import { createDevices } from './sync/devices.ts';
import { createVisitServices } from './visits/index.ts';

export interface ServiceDeps {
  readonly config: Config;
  readonly db: Db;
  readonly clock: Clock;
  readonly signingKeys: SigningKeys;
  readonly idTokens: IdTokenVerifier;
  readonly mailTransport: MailTransport;
  readonly phi: PhiCrypto;
}

/** Every service, wired once; shared by routes, jobs, the admin socket and the CLI. */
export function createServices(deps: ServiceDeps) {
  const { config, clock } = deps;
  const unitOfWork = createUnitOfWork(deps.db);
  const db = unitOfWork.db;
  const accessTokens = createAccessTokens({
    keys: deps.signingKeys,
    issuer: config.jwt.issuer,
    audience: config.jwt.audience,
    ttlSeconds: config.jwt.accessTtlSeconds,
  });
  const sessions = createSessions({ db, clock, accessTokens, refreshTtlSeconds: config.jwt.refreshTtlSeconds });
  const throttle = createThrottle({ clock });
  const mail = createMailOutbox({ db, clock, transport: deps.mailTransport, phi: deps.phi });
  const idempotency = createIdempotency({ db, clock, phi: deps.phi, ttlSeconds: config.limits.idempotencyTtlSeconds });
  const notifications = createNotifications({ db, clock, pushEnabled: config.fcm !== null });
  const organizationServices = createOrganizationServices({ db, clock, config, sessions, throttle, mail, notifications });
  const audit = createAuditLog({ db, clock, durably: unitOfWork.durably });
  const clinicianSettings = createClinicianSettings({ db, clock });
  const audio = createAudio({ db, clock, config, phi: deps.phi, audit, onRollback: unitOfWork.onRollback });
  return {
    config,
    /** Runs several service calls in one transaction (the sync channel's mutations). */
    unitOfWork,
    accessTokens,
    phi: deps.phi,
    audit,
    clinicianSettings,
    sessions,
    throttle,
    /** REST request counts per user and per address (http/rate-limit.ts). */
    requestRate: createRequestRate({ db, clock, throttle }),
    mail,
    accounts: createAccounts({ db, clock, config, sessions, throttle, idTokens: deps.idTokens, mail }),
    passwordReset: createPasswordReset({ db, clock, config, throttle, sessions, mail }),
    emailVerification: createEmailVerification({ db, clock, config, throttle, mail }),
    /** Devices (sync clients): operators list and revoke them; the sync hub admits them. */
    devices: createDevices({ db, clock, audit }),
    users: createUsers({ db, clock, sessions, joinRequests: organizationServices.joinRequests }),
    ...organizationServices,
    ...createVisitServices({ db, clock, phi: deps.phi, audit, settings: clinicianSettings }),
    ...createRoutingServices({ db, clock, phi: deps.phi, audit, config }),
    idempotency,
    /** `notifications.record(tx, {userId, type, data})`: the history every feature writes to. */
    notifications,
    push: createPush({ db, fcm: config.fcm ? createFcmClient({ config: config.fcm, clock }) : null }),
    messages: createMessages({ db, clock, phi: deps.phi, audit, mail, notifications, replyDomain: config.messages.replyDomain }),
    maintenance: createMaintenance({ db, clock, idempotency, embedded: config.database.kind === 'pglite' }),
    /** The caller's organization seat, for audit contexts (http/audit-context.ts). */
    seatOf: (userId: string) => seatOf(db, userId),
    patients: createPatients({ db, clock, phi: deps.phi, audit }),
    auditExport: createAuditExport({ db, audit }),
    auditVerify: createAuditVerify({ db }),
    phiKeys: createPhiRotation({ db, config, phi: deps.phi, audit }),
    reports: createReports({ db, clock, phi: deps.phi, audit, settings: clinicianSettings }),
    subscriptions: createSubscriptions({ db, clock, config }),
    demoSeed: createDemoSeed({ db, clock, phi: deps.phi, audit, settings: clinicianSettings }),
    /** Discipline checklists: items, transcript match, suggestions (stateless, services/ai/notes). */
    aiChecklists: createAiChecklists(),
    /** Stored audio: encrypted object store, tus uploads, ffmpeg input (services/audio). */
    audio,
    /** AI documentation runs on Graphile Worker (services/ai/pipeline). */
    aiPipeline: createAiPipeline({
      db,
      clock,
      phi: deps.phi,
      audit,
      config: config.ai,
      stt: createSpeechToText(config.ai.stt),
      notes: createNoteGenerator(config.ai.notes),
      audio,
      media: { normaliseToPcm16kMono },
      maxDurationMs: config.audio.maxDurationSeconds * 1000,
      normaliseTimeoutMs: config.ai.pipeline.normaliseTimeoutMs,
      // A finished run tells the clinician in its own transaction: note_ready or note_failed.
      onFinished: async (tx, run) => {
        await notifications.record(tx, {
          userId: run.userId,
          type: run.status === 'completed' ? 'note_ready' : 'note_failed',
          data: { transcription_uuid: run.transcriptionUuid, schedule_uuid: run.visitId },
        });
      },
    }),
  };
}

export type Services = ReturnType<typeof createServices>;
