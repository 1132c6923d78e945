export * from './envelope.ts';
export * from './common.ts';
export * from './accounts.ts';
export * from './organizations.ts';
export * from './patients.ts';
export * from './visits.ts';
export * from './clinician-settings.ts';
export * from './reports.ts';
