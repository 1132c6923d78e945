export * from './sync-columns.ts';
export * from './accounts.ts';
export * from './organizations.ts';
export * from './clinical.ts';
export * from './sync.ts';
export * from './ai.ts';
export * from './audio.ts';
