import type { Command } from 'commander';
import { serve } from '@fieldchart/server';

export function registerServe(program: Command): void {
  program
    .command('serve')
    .description('Start the server exactly like `npm start` (configured by the same environment variables)')
    .action(async () => {
      // `serve` loads Fastify and the routes when called: the other commands never do.
      await serve();
    });
}
