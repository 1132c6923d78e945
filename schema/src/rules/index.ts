/**
 * Domain rules the server and the offline client both apply, written once. Pure: no database,
 * no clock, no Node built-ins (the client bundle runs in a browser).
 */
export * from './timer.ts';
export * from './visits.ts';
export * from './soap.ts';
export * from './local-date.ts';
export * from './field-errors.ts';
