// gw wallet topup|set|show|alert: the organization wallet.
import { randomUUID } from 'node:crypto';
import {
  committedChange,
  committedChangeId,
  readWallet,
  recordedChangeError,
  topUpWallet,
} from '../admin/wallet.js';
import { setWalletAlert } from '../billing/wallet-alert.js';
import {
  WalletChangeOwedError,
  type WalletChangeKind,
  type WalletTransaction,
} from '../billing/wallets.js';
import { isGwError, type GwError } from '../errors.js';
import { idempotencyKeyProblem } from '../idempotency/key.js';
import { IdempotencyStore, requestFingerprint } from '../idempotency/store.js';
import { formatNano } from '../money.js';
import { JsonAnswer, type RouteResult } from '../routes/framework/declaration.js';
import { runUnderKey, type KeyRefusals } from '../routes/framework/idempotent.js';
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
gw wallet set   --org-id O --amount 0.00 [--idempotency-key K]   sets the balance exactly
  Setting it again is safe; with a key it is set once per key (kept 24 hours), as a top-up is.
gw wallet show  --org-id O                   prints balance and amount held by in-flight requests
gw wallet alert --org-id O --low-balance-threshold 5.00|none
  A request that takes the balance below the threshold sends the wallet.low_balance webhook
  (set above the balance: nothing until a top-up lifts the balance over it).
  Prints the alert as the dashboard API answers it: {"org_id","low_balance_threshold",
  "currency"}.`;

const WALLET_FLAGS = {
  'org-id': { type: 'string' },
  amount: { type: 'string' },
  'low-balance-threshold': { type: 'string' },
  'idempotency-key': { type: 'string' },
} as const;
type WalletFlag = keyof typeof WALLET_FLAGS;

/**
 * The flags each action takes besides --org-id. Any other one given is refused, never ignored
 * (decision 574): a key given to `show` or `alert` promised nothing it could keep.
 */
const ACTION_FLAGS: Readonly<Record<string, readonly WalletFlag[]>> = {
  topup: ['amount', 'idempotency-key'],
  set: ['amount', 'idempotency-key'],
  show: [],
  alert: ['low-balance-threshold'],
};

/** Why an action takes no key: it has nothing to make once. */
const NO_KEY_BECAUSE: Readonly<Record<string, string>> = {
  show: 'it changes nothing, so there is nothing to make once',
  alert: 'setting the threshold again sets the same threshold',
};

export async function walletCommand(context: CliContext, argv: string[]): Promise<void> {
  const [action, ...rest] = argv;
  const { values } = parseFlags(rest, WALLET_FLAGS);
  const takes =
    action !== undefined && Object.hasOwn(ACTION_FLAGS, action) ? ACTION_FLAGS[action] : undefined;
  if (takes === undefined) {
    throw new UsageError(`unknown wallet action ${action ?? '(none)'}\n${walletHelp}`);
  }
  const stray = (Object.keys(WALLET_FLAGS) as WalletFlag[]).find(
    (name) => name !== 'org-id' && values[name] !== undefined && !takes.includes(name),
  );
  if (stray !== undefined) {
    const why =
      stray === 'idempotency-key'
        ? `: ${NO_KEY_BECAUSE[action!]} (the key is for topup and set)`
        : '';
    throw new UsageError(`gw wallet ${action} takes no --${stray}${why}`);
  }
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
  if (action === 'show') {
    printJson(await readWallet(context.wallets, orgId));
    return;
  }
  const kind: WalletChangeKind = action === 'topup' ? 'topup' : 'set';
  const amountText = requireFlag(values.amount, 'amount');
  const change: WalletChange = {
    kind,
    orgId,
    amountNano: amountFlag(amountText, 'amount'),
    amountText,
  };
  // A set without a key runs as it is: run again, it is safe (decision 557).
  if (kind === 'set' && values['idempotency-key'] === undefined) {
    printJson(orUsageError(await changeAnswered(context, change), FIELD_FLAGS));
    return;
  }
  await changeUnderKey(context, change, values['idempotency-key']);
}

/** The service's refusals name the API field (`amount: …`); the command names its flag. */
const FIELD_FLAGS: Readonly<Record<string, string>> = { amount: 'amount' };

/** A top-up or balance set a command makes: the amount as given, and as nano. */
interface WalletChange {
  readonly kind: WalletChangeKind;
  readonly orgId: string;
  readonly amountNano: bigint;
  readonly amountText: string;
}

const NOUN: Readonly<Record<WalletChangeKind, string>> = {
  topup: 'top-up',
  set: 'balance set',
};

/**
 * The change made, then the wallet read after it: its answer. One recorded whose step after
 * the commit failed is made (the read adds it, once: decisions 521, 544); a read that fails
 * after it says it was recorded, never "unexpected error" (542, 557).
 */
async function changeAnswered(
  context: CliContext,
  { kind, orgId, amountNano }: WalletChange,
): Promise<RouteResult> {
  let made: WalletTransaction | GwError;
  if (kind === 'topup') {
    made = await topUpWallet(context.wallets, orgId, amountNano, CLI_ACTOR);
  } else {
    made = await context.wallets
      .setBalance(orgId, amountNano, CLI_ACTOR)
      .catch((error: unknown) => {
        if (error instanceof WalletChangeOwedError) return error.transaction;
        throw error;
      });
  }
  return isGwError(made) ? made : answerAfter(context, kind, orgId, made);
}

function answerAfter(
  context: CliContext,
  kind: WalletChangeKind,
  orgId: string,
  transaction: WalletTransaction,
): Promise<RouteResult> {
  return readWallet(context.wallets, orgId).catch(() =>
    recordedChangeError(kind, transaction.id, orgId, 'cli'),
  );
}

/**
 * What the key's refusals say from the CLI (decision 575): the --idempotency-key flag, the
 * command and what differed, where the routes' name the Idempotency-Key header and "path or
 * body".
 */
function cliKeyRefusals({ kind, orgId, amountText }: WalletChange, key: string): KeyRefusals {
  const noun = NOUN[kind];
  const run = `gw wallet ${kind} with --idempotency-key ${key}`;
  const check = `check the wallet (gw wallet show --org-id ${orgId})`;
  const made = (startedAt?: string) =>
    `the first run of ${run}${startedAt === undefined ? '' : `, started at ${startedAt},`}`;
  return {
    reused: `--idempotency-key ${key} was already used by gw wallet ${kind} for this organization with another --amount: ${
      kind === 'topup'
        ? `a key tops up once, by one amount; use a new key to top up ${amountText}`
        : `a key sets the balance once, to one amount; use a new key to set it to ${amountText}`
    }`,
    running: (committed) =>
      `a run of ${run} is still under way${committed ? `: it has made the ${noun} and not yet recorded its answer` : ''}; run the command again in a moment for its answer`,
    abandoned: (startedAt, committed) =>
      committed
        ? `${made(startedAt)} made the ${noun} but did not record its answer (it was stopped, or lost Postgres): ${check} before using a new key`
        : `${made(startedAt)} did not record its answer (it was stopped, or lost Postgres, mid-way): the ${noun} may or may not have been made; ${check}, then use a new key`,
    failed: (committed) =>
      committed
        ? `${made()} made the ${noun}, then failed before answering; ${check}, then use a new key`
        : `${made()} failed and may or may not have made the ${noun}; ${check}, then use a new key`,
    unopenable: `${made()} succeeded and its answer cannot be shown again; ${check}`,
    unreplayable: `${made()} succeeded and its answer cannot be shown again; ${check}`,
  };
}

/**
 * `gw wallet topup`, and `gw wallet set --idempotency-key`, under an idempotency key
 * (decisions 560, 574), the dashboard's top-up machinery (src/idempotency, the commit fence
 * keeping the change's transaction with the key, 542): the same key makes the change at most
 * once. A run whose outcome it could not learn — a COMMIT whose answer was lost, a connection
 * cut mid-way — asks the key again at once: a change that committed is finished (applied to
 * the live wallet once) and answered, one that did not is made now. Only when that fails too
 * does the command end, telling the key to run it again with.
 */
async function changeUnderKey(
  context: CliContext,
  change: WalletChange,
  givenKey: string | undefined,
): Promise<void> {
  const { kind, orgId, amountNano } = change;
  const key = givenKey ?? randomUUID();
  const problem = idempotencyKeyProblem(key);
  if (problem !== undefined) throw new UsageError(`--idempotency-key: ${problem}`);
  const command = `gw wallet ${kind}`;
  const noun = NOUN[kind];
  const idempotent = {
    orgId,
    caller: 'cli',
    route: command,
    key,
    requestHash: requestFingerprint(command, { amount: formatNano(amountNano) }),
  };
  // The CLI's answer (the wallet) holds no secret: kept in clear, no master key needed.
  const store = new IdempotencyStore(context.db, undefined);
  const run = (): Promise<RouteResult> =>
    runUnderKey(
      store,
      idempotent,
      { successStatus: kind === 'topup' ? 201 : 200, carriesSecret: false },
      () => changeAnswered(context, change),
      {
        effectOf: (committed) => committedChangeId(kind, committed),
        answer: async (transactionId) =>
          answerAfter(
            context,
            kind,
            orgId,
            await committedChange(context.db, kind, orgId, transactionId),
          ),
      },
      cliKeyRefusals(change, key),
    );
  let result: RouteResult;
  let note = `the ${noun} with idempotency key ${key} was made already: ${kind === 'topup' ? 'nothing added' : 'nothing changed'} this time`;
  try {
    result = await run();
  } catch (error) {
    const cause = error instanceof Error ? error.message : 'failed';
    note = `the ${noun}'s answer was lost (${cause}); its idempotency key ${key} says it was made, once`;
    const unknown = (answered = '') =>
      new UsageError(
        `whether the ${noun} was made is unknown (${cause})${answered}: run the same command again with --idempotency-key ${key}; it ${kind === 'topup' ? 'tops up' : 'sets the balance'} once at most`,
        'gw_unavailable',
      );
    result = await run().catch(async (again: unknown) => {
      // Both runs ended with their key freed: neither committed anything (decision 571).
      if (await store.free(idempotent).catch(() => false)) {
        const why = again instanceof Error ? again.message : 'failed';
        throw new UsageError(
          `the ${noun} was not made (${why}): nothing was recorded; run the command again`,
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
  const answered = orUsageError(result, FIELD_FLAGS);
  // A replay, or the finish of a first run that committed: said on stderr, the wallet on stdout.
  if (answered instanceof JsonAnswer) cliIo().write('stderr', `${note}\n`);
  printJson(answered instanceof JsonAnswer ? answered.body : answered);
}
