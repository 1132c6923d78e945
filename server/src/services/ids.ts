const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** A path segment that cannot be a uuid names no record: it answers the same 404. */
export const isUuid = (s: string) => UUID.test(s);
