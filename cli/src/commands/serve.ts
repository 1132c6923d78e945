import type { Command } from 'commander';

export function registerServe(program: Command): void {
  program
    .command('serve')
    .description('Start the server exactly like `npm start` (configured by the same environment variables)')
    .action(async () => {
      // Loaded on demand: the other commands do not need Fastify and the routes.
      const { serve } = await import('../../../server/src/main.ts');
      await serve();
    });
}
