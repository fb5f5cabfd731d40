// gw usage prune --before YYYY-MM [--apply]: usage retention (src/ledger/retention.ts).
// gw usage rebuild-totals: the running totals again from the ledger (src/ledger/usage-rollups.ts).
import { pruneUsage, RetentionError } from '../ledger/retention.js';
import { rebuildRunningTotals } from '../ledger/usage-rollups.js';
import type { CliContext } from './context.js';
import { parseFlags, printJson, requireFlag, UsageError } from './output.js';

export const usageHelp = `gw usage prune --before YYYY-MM [--apply]
  lists (or with --apply drops) the months of usage_records before YYYY-MM; what each month
  took from each wallet is kept as one 'usage_archived' wallet transaction, so balances do not
  change; the dashboard's rollups stay. The current and previous months are kept.
gw usage rebuild-totals
  computes the wallets' running totals (what usage took, per org and month) again from
  usage_records, the monthly product-user rollup from the daily one, and the rollups' prompt
  cache parts and web searches from the records that have any, holding the ledger's writes
  meanwhile; run it once a rollout past migration 041 (or 051) has no older instance left.`;

export async function usageCommand(context: CliContext, argv: string[]): Promise<void> {
  const [action, ...rest] = argv;
  if (action === 'rebuild-totals') {
    parseFlags(rest, {});
    printJson(await rebuildRunningTotals(context.db));
    return;
  }
  if (action !== 'prune')
    throw new UsageError(`unknown usage action ${action ?? '(none)'}\n${usageHelp}`);
  const { values } = parseFlags(rest, {
    before: { type: 'string' },
    apply: { type: 'boolean' },
  });
  const apply = values.apply === true;
  try {
    const months = await pruneUsage(context.db, {
      before: requireFlag(values.before, 'before'),
      apply,
    });
    printJson({ applied: apply, months });
  } catch (error) {
    if (error instanceof RetentionError) throw new UsageError(error.message);
    throw error;
  }
}
