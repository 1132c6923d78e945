import { z } from 'zod';
import { op } from './operation.ts';

/** `fieldchart seed --demo`: the demo clinician and caseload (server/src/services/seed/). */
export const seedOperations = {
  'seed.demo': op(z.object({}), (ctx) => ctx.services.demoSeed.run(ctx.services)),
} as const;
