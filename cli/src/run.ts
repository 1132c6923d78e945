import type { Command } from 'commander';
import { ConfigError, loadConfig, type Config, type OperationArgs, type OperationName, type OperationResult } from '@fieldchart/server';
import { execute } from './connect.ts';
import { CliError, EXIT } from './errors.ts';
import { progressReporter } from './progress.ts';

/** Operations that loop over many rows or bytes and say how far they are, with their label. */
const LONG_OPERATIONS: ReadonlyMap<string, string> = new Map([
  ['seed.demo', 'seed'],
  ['keys.rotate', 'keys rotate'],
  ['keys.reencrypt', 'keys reencrypt'],
  ['db.backup', 'backup'],
]);

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
  await printedResult(command, name, args, text);
}

/** `runAndPrint` that also answers the result, for a command whose exit code depends on it. */
export async function printedResult<N extends OperationName>(
  command: Command,
  name: N,
  args: OperationArgs<N>,
  text: (result: OperationResult<N>) => string,
): Promise<OperationResult<N>> {
  const opts = command.optsWithGlobals<GlobalOptions>();
  const config = configFromEnvironment();
  // Long operations report progress: a bar on a terminal, plain lines otherwise (stderr).
  const label = LONG_OPERATIONS.get(name);
  const reporter = label ? progressReporter(label) : null;
  let outcome;
  try {
    outcome = await execute(config, name, args, reporter?.progress);
  } finally {
    reporter?.stop();
  }
  const { result, via } = outcome;
  if (opts.verbose) process.stderr.write(`fieldchart: ${via}\n`);
  process.stdout.write(opts.json ? `${JSON.stringify(result, null, 2)}\n` : text(result));
  return result;
}
