/**
 * `npx fieldchart <command>`: the operator CLI. Each command is one operation from
 * `@fieldchart/server`'s `operations`; connect.ts decides how to reach the database.
 */
import fs from 'node:fs';
import { Command, CommanderError } from 'commander';
import { registerAi } from './commands/ai.ts';
import { registerAudit } from './commands/audit.ts';
import { registerBackup } from './commands/backup.ts';
import { registerDevice } from './commands/device.ts';
import { registerInvitation } from './commands/invitation.ts';
import { registerKeys } from './commands/keys.ts';
import { registerMail } from './commands/mail.ts';
import { registerMigrate } from './commands/migrate.ts';
import { registerOrg } from './commands/org.ts';
import { registerSeed } from './commands/seed.ts';
import { registerServe } from './commands/serve.ts';
import { registerUser } from './commands/user.ts';
import { registerWorker } from './commands/worker.ts';
import { CliError, EXIT } from './errors.ts';

const { version } = JSON.parse(fs.readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };

export function buildProgram(): Command {
  const program = new Command('fieldchart')
    .description(
      'Operate a Fieldchart installation. Uses the same environment as the server (DATABASE_URL, ' +
        'FIELDCHART_DATA_DIR, …); while a server runs on the embedded database, commands go through its admin socket.',
    )
    .version(version)
    .option('--json', 'print the result as JSON')
    .option('--verbose', 'say on stderr how the database was reached')
    // Settings below are inherited by every command added afterwards.
    .exitOverride()
    .showHelpAfterError('(add --help for usage)')
    .configureHelp({ showGlobalOptions: true });
  registerServe(program);
  registerWorker(program);
  registerMigrate(program);
  registerUser(program);
  registerDevice(program);
  registerMail(program);
  registerOrg(program);
  registerInvitation(program);
  registerSeed(program);
  registerKeys(program);
  registerAudit(program);
  registerBackup(program);
  registerAi(program);
  return program;
}

async function main(argv: string[]): Promise<number> {
  try {
    await buildProgram().parseAsync(argv);
    return EXIT.ok;
  } catch (err) {
    if (err instanceof CommanderError) {
      // commander already printed the help or the message.
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version') return EXIT.ok;
      return err.exitCode === 0 ? EXIT.ok : EXIT.usage;
    }
    if (err instanceof CliError) {
      process.stderr.write(`fieldchart: ${err.message}${err.code && !err.message.includes('\n') ? ` (${err.code})` : ''}\n`);
      return err.exitCode;
    }
    process.stderr.write(`fieldchart: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    return EXIT.failed;
  }
}

const code = await main(process.argv);
// `serve` keeps running on its own handles; every other command ends here.
process.exitCode = code;
