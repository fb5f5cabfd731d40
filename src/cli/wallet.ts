// gw wallet topup|set|show|alert: the organization wallet.
import { randomUUID } from 'node:crypto';
import {
  committedTopUp,
  committedTopUpId,
  readWallet,
  recordedChangeError,
  topUpWallet,
} from '../admin/wallet.js';
import { setWalletAlert } from '../billing/wallet-alert.js';
import { WalletChangeOwedError, type WalletTransaction } from '../billing/wallets.js';
import { isGwError } from '../errors.js';
import { IDEMPOTENCY_KEY_HEADER, idempotencyKeyOf } from '../idempotency/key.js';
import { IdempotencyStore, requestFingerprint } from '../idempotency/store.js';
import { formatNano } from '../money.js';
import { JsonAnswer, type RouteResult } from '../routes/framework/declaration.js';
import { runUnderKey } from '../routes/framework/idempotent.js';
import { CLI_ACTOR, type CliContext } from './context.js';
import { cliIo } from './io.js';
import {
  amountFlag,
  orUsageError,
  parseFlags,
  printJson,
  requireFlag,
  UsageError,
} from './output.js';

export const walletHelp = `gw wallet topup --org-id O --amount 100.00 [--idempotency-key K]   adds funds
  Once per key (kept 24 hours; one is made when none is given): run again with the same key,
  the command tops up at most once, and answers what the first did.
gw wallet set   --org-id O --amount 0.00     sets the balance exactly
gw wallet show  --org-id O                   prints balance and amount held by in-flight requests
gw wallet alert --org-id O --low-balance-threshold 5.00|none
  A request that takes the balance below the threshold sends the wallet.low_balance webhook
  (set above the balance: nothing until a top-up lifts the balance over it).
  Prints the alert as the dashboard API answers it: {"org_id","low_balance_threshold",
  "currency"}.`;

export async function walletCommand(context: CliContext, argv: string[]): Promise<void> {
  const [action, ...rest] = argv;
  const { values } = parseFlags(rest, {
    'org-id': { type: 'string' },
    amount: { type: 'string' },
    'low-balance-threshold': { type: 'string' },
    'idempotency-key': { type: 'string' },
  });
  const orgId = requireFlag(values['org-id'], 'org-id');
  const exists = await context.db.query('SELECT 1 FROM wallets WHERE org_id = $1', [orgId]);
  if (exists.rowCount === 0)
    throw new UsageError(`no wallet for organization ${orgId}`, 'gw_not_found');
  if (action === 'alert') {
    const text = requireFlag(values['low-balance-threshold'], 'low-balance-threshold');
    const threshold = text.trim() === 'none' ? null : amountFlag(text, 'low-balance-threshold');
    printJson(await setWalletAlert(context.db, CLI_ACTOR, orgId, threshold));
    return;
  }
  if (action === 'topup') {
    const amountNano = amountFlag(requireFlag(values.amount, 'amount'), 'amount');
    await topUpCommand(context, orgId, amountNano, values['idempotency-key']);
    return;
  } else if (action === 'set') {
    const target = amountFlag(requireFlag(values.amount, 'amount'), 'amount');
    await context.wallets.setBalance(orgId, target, CLI_ACTOR).catch((error: unknown) => {
      if (!(error instanceof WalletChangeOwedError)) throw error;
      // Recorded: said so, rather than "unexpected error" (decision 557); orUsageError throws
      // it as the command's error.
      orUsageError(recordedChangeError('set', error.transaction.id, orgId, 'cli'));
    });
  } else if (action !== 'show') {
    throw new UsageError(`unknown wallet action ${action ?? '(none)'}\n${walletHelp}`);
  }
  printJson(await readWallet(context.wallets, orgId));
}

/**
 * `gw wallet topup` under an idempotency key (decision 560), the dashboard's top-up machinery
 * (src/idempotency, the commit fence keeping the top-up's transaction with the key, 542): the
 * same key tops up at most once. A run whose outcome it could not learn — a COMMIT whose answer
 * was lost, a connection cut mid-way — asks the key again at once: a top-up that committed is
 * finished (added to the live wallet once) and answered, one that did not is made now. Only when
 * that fails too does the command end, telling the key to run it again with.
 */
async function topUpCommand(
  context: CliContext,
  orgId: string,
  amountNano: bigint,
  givenKey: string | undefined,
): Promise<void> {
  const key = orUsageError(
    idempotencyKeyOf({ [IDEMPOTENCY_KEY_HEADER]: givenKey ?? randomUUID() }),
  )!;
  const command = 'gw wallet topup';
  const idempotent = {
    orgId,
    caller: 'cli',
    route: command,
    key,
    requestHash: requestFingerprint(command, { amount: formatNano(amountNano) }),
  };
  // The CLI's answer (the wallet) holds no secret: kept in clear, no master key needed.
  const store = new IdempotencyStore(context.db, undefined);
  // Recorded: a read that fails after it says so, never "unexpected error" (decision 542).
  const answer = (transaction: WalletTransaction) =>
    readWallet(context.wallets, orgId).catch(() =>
      recordedChangeError('topup', transaction.id, orgId, 'cli'),
    );
  const topUp = (): Promise<RouteResult> =>
    runUnderKey(
      store,
      idempotent,
      { successStatus: 201, carriesSecret: false },
      async () => {
        const made = await topUpWallet(context.wallets, orgId, amountNano, CLI_ACTOR);
        return isGwError(made) ? made : answer(made);
      },
      {
        effectOf: committedTopUpId,
        answer: async (transactionId) =>
          answer(await committedTopUp(context.db, orgId, transactionId)),
      },
    );
  let result: RouteResult;
  let note = `the top-up with idempotency key ${key} was made already: nothing added this time`;
  try {
    result = await topUp();
  } catch (error) {
    const cause = error instanceof Error ? error.message : 'failed';
    note = `the top-up's answer was lost (${cause}); its idempotency key ${key} says it was made, once`;
    const unknown = (answered = '') =>
      new UsageError(
        `whether the top-up was made is unknown (${cause})${answered}: run the same command again with --idempotency-key ${key}; it tops up once at most`,
        'gw_unavailable',
      );
    result = await topUp().catch(async (again: unknown) => {
      // Both runs ended with their key freed: neither committed anything (decision 571).
      if (await store.free(idempotent).catch(() => false)) {
        const why = again instanceof Error ? again.message : 'failed';
        throw new UsageError(
          `the top-up was not made (${why}): nothing was recorded; run the command again`,
          'gw_unavailable',
        );
      }
      throw unknown();
    });
    // The key still held, or its first run's end unknown (decision 570): the key may be the
    // command's own, which only this error can tell the operator.
    if (isGwError(result) && result.code === 'gw_conflict') {
      throw unknown(`; its idempotency key ${key}, asked again, answered: ${result.message}`);
    }
  }
  const answered = orUsageError(result);
  // A replay, or the finish of a first run that committed: said on stderr, the wallet on stdout.
  if (answered instanceof JsonAnswer) cliIo().write('stderr', `${note}\n`);
  printJson(answered instanceof JsonAnswer ? answered.body : answered);
}
