export * from './envelope.ts';
export * from './common.ts';
export * from './accounts.ts';
export * from './organizations.ts';
