import { z } from 'zod';
import { op } from './operation.ts';

/** `fieldchart seed --demo`: the demo clinician and caseload (server/src/services/seed/). */
export const seedOperations = {
  'seed.demo': op(z.object({}), async (ctx, _args, progress) => {
    const seeded = await ctx.services.demoSeed.run(ctx.services, progress);
    // A bulk load: the embedded database plans the new rows from fresh statistics.
    await ctx.services.maintenance.analyzeEmbedded();
    return seeded;
  }),
} as const;
