/**
 * Where the contract's API lives under the origin. Apart from app.ts so that code which only
 * needs the path (the package door, test helpers) does not load Fastify and every route.
 */
export const API_PREFIX = '/api/therapist/v1';
