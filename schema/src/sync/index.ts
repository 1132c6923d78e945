export * from './close-codes.ts';
export * from './item-frames.ts';
export * from './messages.ts';
export * from './rows.ts';
export * from './mutations.ts';
export * from './versions.ts';
