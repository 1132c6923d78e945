import { DISCIPLINES } from '@fieldchart/schema/api';
import type { Config } from '../../config.ts';

/** What GET /master/setting-list tells the app: limits and vocabularies it must honour. */
export function appSettings(config: Config): Record<string, unknown> {
  return {
    api_version: 'v1',
    disciplines: [...DISCIPLINES],
    password_min_length: 8,
    password_max_length: 1024,
    otp_length: 6,
    otp_valid_seconds: config.limits.otpTtlSeconds,
    access_token_ttl_seconds: config.jwt.accessTtlSeconds,
    refresh_token_ttl_seconds: config.jwt.refreshTtlSeconds,
    trial_days: config.trialDays,
    subscription_products: ['service_monthly', 'service_annual'],
    organization_types: ['staffing_company', 'home_health_agency', 'clinic', 'private_practice', 'hospital'],
    audio_max_bytes: { visit_audio_upload: 50 * 1024 * 1024, ai_process_audio: 100 * 1024 * 1024 },
    audio_types: ['m4a', 'wav', 'mp3'],
    ai_status_poll_seconds: 5,
    social_sign_in: {
      google: config.social.google.clientIds.length > 0,
      apple: config.social.apple.clientIds.length > 0,
    },
  };
}
