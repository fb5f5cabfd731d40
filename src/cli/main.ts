// The `gw` admin CLI: JSON on stdout; errors on stderr with a non-zero exit code.
import { ConfigError } from '../config.js';
import { AmountError } from '../money.js';
import { adminCommand, adminHelp } from './admin.js';
import { apiKeyCommand, apiKeyHelp } from './api-key.js';
import { capCommand, capHelp } from './cap.js';
import { credentialsCommand, credentialsHelp } from './credentials.js';
import { openCliContext, type CliContext } from './context.js';
import { mockVendorsCommand } from './mock-vendors.js';
import { cliIo } from './io.js';
import { UsageError } from './output.js';
import { creditsCommand, productUserCommand, productUserHelp } from './product-user.js';
import { seedCommand, seedHelp } from './seed.js';
import { serviceKeyCommand, serviceKeyHelp } from './service-key.js';
import { walletCommand, walletHelp } from './wallet.js';

const help = `gw — admin CLI for the gw inference gateway

Usage: gw <command> [flags]   (every command prints JSON)

${seedHelp}

${walletHelp}

${apiKeyHelp}

${serviceKeyHelp}

${capHelp}

${productUserHelp}

${credentialsHelp}

${adminHelp}

gw mock-vendors [--port N] [--host H] [--latency-ms N] [--tokens-per-second N] [--output-tokens N]
  Serves both mock vendors on one port (vendor_a at /v1/messages, vendor_b at
  /v1/chat/completions) until SIGINT/SIGTERM.

Environment: DATABASE_URL, REDIS_URL, REDIS_KEY_PREFIX as for the gateway (see README).`;

type DataCommand = (context: CliContext, argv: string[]) => Promise<void>;
const dataCommands: Record<string, DataCommand> = {
  seed: seedCommand,
  wallet: walletCommand,
  'api-key': apiKeyCommand,
  'service-key': serviceKeyCommand,
  cap: capCommand,
  'product-user': productUserCommand,
  credits: creditsCommand,
  credentials: credentialsCommand,
  admin: adminCommand,
};

/** Runs one command; resolves with its exit code (0 done, 2 refused, 1 a bug). */
export async function runCli(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  const io = cliIo();
  if (
    command === undefined ||
    command === '--help' ||
    command === '-h' ||
    command === 'help' ||
    rest.includes('--help') ||
    rest.includes('-h')
  ) {
    io.write('stdout', `${help}\n`);
    return 0;
  }
  if (command === 'mock-vendors') {
    return mockVendorsCommand(rest).then(() => 0, fail);
  }
  const run = dataCommands[command];
  if (!run) return fail(new UsageError(`unknown command ${command}; see gw --help`));
  let context: CliContext | undefined;
  try {
    context = await openCliContext();
    await run(context, rest);
    return 0;
  } catch (error) {
    return fail(error);
  } finally {
    await context?.close();
  }
}

function fail(error: unknown): number {
  const known =
    error instanceof UsageError || error instanceof AmountError || error instanceof ConfigError;
  const message = known
    ? (error as Error).message
    : `unexpected error: ${(error as Error).message}`;
  cliIo().write('stderr', `${JSON.stringify({ error: { message } })}\n`);
  return known ? 2 : 1;
}
