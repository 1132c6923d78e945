/**
 * @fieldchart/client — the Fieldchart client library. This first slice is the typed REST
 * client ({@link createRestClient}); transport, storage and sync for offline use come next.
 * Browser-safe: nothing here imports server code or Node built-ins.
 *
 * @packageDocumentation
 */
export * from './rest/index.ts';
