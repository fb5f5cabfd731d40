// gw usage prune --before YYYY-MM [--apply]: usage retention (src/ledger/retention.ts).
import { pruneUsage, RetentionError } from '../ledger/retention.js';
import type { CliContext } from './context.js';
import { parseFlags, printJson, requireFlag, UsageError } from './output.js';

export const usageHelp = `gw usage prune --before YYYY-MM [--apply]
  lists (or with --apply drops) the months of usage_records before YYYY-MM; what each month
  took from each wallet is kept as one 'usage_archived' wallet transaction, so balances do not
  change; the dashboard's daily rollups stay. The current and previous months are kept.`;

export async function usageCommand(context: CliContext, argv: string[]): Promise<void> {
  const [action, ...rest] = argv;
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
