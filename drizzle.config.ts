import { defineConfig } from 'drizzle-kit';

export default defineConfig({
  dialect: 'postgresql',
  schema: './schema/src/db/index.ts',
  out: './server/migrations',
  // graphile-worker owns its own schema and migrations.
  schemaFilter: ['public'],
});
