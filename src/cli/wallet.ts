// gw wallet topup|set|show|alert: the organization wallet.
import { readWallet, recordedChangeError, topUpWallet } from '../admin/wallet.js';
import { setWalletAlert } from '../billing/wallet-alert.js';
import { WalletChangeOwedError, type WalletChangeKind } from '../billing/wallets.js';
import { CLI_ACTOR, type CliContext } from './context.js';
import {
  amountFlag,
  orUsageError,
  parseFlags,
  printJson,
  requireFlag,
  UsageError,
} from './output.js';

export const walletHelp = `gw wallet topup --org-id O --amount 100.00   adds funds
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
    const transaction = orUsageError(
      await topUpWallet(
        context.wallets,
        orgId,
        amountFlag(requireFlag(values.amount, 'amount'), 'amount'),
        CLI_ACTOR,
      ),
    );
    // Recorded: a command run again would top up again (it has no key to retry with), so a
    // read that fails after it says so (decision 542).
    printJson(
      await readWallet(context.wallets, orgId).catch(() => {
        throw recordedChange('topup', transaction.id, orgId);
      }),
    );
    return;
  } else if (action === 'set') {
    const target = amountFlag(requireFlag(values.amount, 'amount'), 'amount');
    await context.wallets.setBalance(orgId, target, CLI_ACTOR).catch((error: unknown) => {
      if (!(error instanceof WalletChangeOwedError)) throw error;
      // Recorded: said so, rather than "unexpected error" (decision 557).
      throw recordedChange('set', error.transaction.id, orgId);
    });
  } else if (action !== 'show') {
    throw new UsageError(`unknown wallet action ${action ?? '(none)'}\n${walletHelp}`);
  }
  printJson(await readWallet(context.wallets, orgId));
}

/** A wallet change recorded whose step after the commit failed, as the command's error. */
function recordedChange(kind: WalletChangeKind, transactionId: string, orgId: string): UsageError {
  const { message, code } = recordedChangeError(kind, transactionId, orgId, 'cli');
  return new UsageError(message, code);
}
