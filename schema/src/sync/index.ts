export * from './close-codes.ts';
export * from './messages.ts';
