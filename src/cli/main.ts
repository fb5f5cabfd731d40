// The `gw` admin CLI: JSON on stdout; errors on stderr with a non-zero exit code.
import { z } from 'zod';
import { ConfigError } from '../config.js';
import { describeIssue, issuePath } from '../validation-messages.js';
import type { ErrorCode } from '../errors.js';
import { AmountError, AmountRangeError } from '../money.js';
import { AppDeletedError } from '../product-users/management.js';
import { adminCommand, adminHelp } from './admin.js';
import { apiKeyCommand, apiKeyHelp } from './api-key.js';
import { capCommand, capHelp } from './cap.js';
import { credentialsCommand, credentialsHelp } from './credentials.js';
import { openCliContext, type CliContext } from './context.js';
import { migrateCommand, migrateHelp } from './migrate.js';
import { mockVendorsCommand, mockVendorsHelp } from './mock-vendors.js';
import { oauthClientCommand, oauthClientHelp } from './oauth-client.js';
import { cliIo } from './io.js';
import { flagName, UsageError } from './output.js';
import { creditsCommand, productUserCommand, productUserHelp } from './product-user.js';
import { reconcileCommand, reconcileHelp } from './reconcile.js';
import { seedCommand, seedHelp } from './seed.js';
import { serviceKeyCommand, serviceKeyHelp } from './service-key.js';
import { usageCommand, usageHelp } from './usage.js';
import { walletCommand, walletHelp } from './wallet.js';
import { webhookCommand, webhookHelp } from './webhook.js';

const help = `gw — admin CLI for the gw inference gateway

Usage: gw <command> [flags]   (every command prints JSON)

${seedHelp}

${walletHelp}

${apiKeyHelp}

${serviceKeyHelp}

${oauthClientHelp}

${capHelp}

${productUserHelp}

${credentialsHelp}

${webhookHelp}

${adminHelp}

${reconcileHelp}

${usageHelp}

${migrateHelp}

${mockVendorsHelp}

Environment: DATABASE_URL, REDIS_URL (or REDIS_CLUSTER_NODES), REDIS_KEY_PREFIX as for the gateway
(see README).`;

type DataCommand = (context: CliContext, argv: string[]) => Promise<void>;
const dataCommands: Record<string, DataCommand> = {
  seed: seedCommand,
  wallet: walletCommand,
  'api-key': apiKeyCommand,
  'service-key': serviceKeyCommand,
  'oauth-client': oauthClientCommand,
  cap: capCommand,
  'product-user': productUserCommand,
  credits: creditsCommand,
  credentials: credentialsCommand,
  webhook: webhookCommand,
  admin: adminCommand,
  reconcile: reconcileCommand,
  usage: usageCommand,
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
  if (command === 'migrate') return migrateCommand(rest).then(() => 0, fail);
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

/**
 * Option issues named as the flags a user typed: `--latency-ms: must be at least 0` (an option
 * named in camelCase or, as a route's query parameter is, in snake_case).
 */
function flagIssues(error: z.ZodError): string {
  return error.issues
    .map((issue) => {
      return `${flagName(issuePath(issue, 'options'))}: ${describeIssue(issue)}`;
    })
    .join('; ');
}

/** Errors in the HTTP API's shape `{"error":{"code","message"}}`: exit 2 refused, 1 a bug. */
function fail(error: unknown): number {
  const { code, message } = cliError(error);
  cliIo().write('stderr', `${JSON.stringify({ error: { code, message } })}\n`);
  return code === 'gw_internal_error' ? 1 : 2;
}

function cliError(error: unknown): { code: ErrorCode; message: string } {
  if (error instanceof UsageError) return { code: error.code, message: error.message };
  // The HTTP API's codes: past the money layer's limit is gw_amount_out_of_range there too.
  if (error instanceof AmountError) {
    // A rule without its subject ("must be at most 1000000") is about the amount given.
    const message = /^(must|has) /.test(error.message) ? `amount: ${error.message}` : error.message;
    const code =
      error instanceof AmountRangeError ? 'gw_amount_out_of_range' : 'gw_invalid_request';
    return { code, message };
  }
  if (error instanceof ConfigError) return { code: 'gw_invalid_config', message: error.message };
  if (error instanceof AppDeletedError) return { code: 'gw_conflict', message: error.message };
  if (error instanceof z.ZodError)
    return { code: 'gw_invalid_request', message: flagIssues(error) };
  return { code: 'gw_internal_error', message: `unexpected error: ${(error as Error).message}` };
}
