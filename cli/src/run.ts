import type { Command } from 'commander';
import { ConfigError, loadConfig, type Config } from '../../server/src/config.ts';
import type { OperationArgs, OperationName, OperationResult } from '../../server/src/admin/operations.ts';
import { CliError, EXIT } from './errors.ts';

export interface GlobalOptions {
  readonly json?: boolean;
  readonly verbose?: boolean;
}

/** The configuration the server would use: the same environment, the same parser. */
export function configFromEnvironment(): Config {
  try {
    return loadConfig(process.env);
  } catch (err) {
    if (err instanceof ConfigError) throw new CliError(err.message, 'invalid_config', EXIT.config);
    throw err;
  }
}

/**
 * Runs one operation for a command and prints it: `--json` prints the result as JSON, otherwise
 * `text` renders it for people. The result is the same on every transport, so is the output.
 */
export async function runAndPrint<N extends OperationName>(
  command: Command,
  name: N,
  args: OperationArgs<N>,
  text: (result: OperationResult<N>) => string,
): Promise<void> {
  const opts = command.optsWithGlobals<GlobalOptions>();
  const config = configFromEnvironment();
  // Loaded on demand, so `--help` does not pay for the database drivers.
  const { execute } = await import('./connect.ts');
  const { result, via } = await execute(config, name, args);
  if (opts.verbose) process.stderr.write(`fieldchart: ${via}\n`);
  process.stdout.write(opts.json ? `${JSON.stringify(result, null, 2)}\n` : text(result));
}
