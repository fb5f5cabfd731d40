// gw usage show --org-id O …: the dashboard API's usage summary (src/admin/usage.ts).
// gw usage prune --before YYYY-MM [--apply]: usage retention (src/ledger/retention.ts).
// gw usage rebuild-totals: the running totals again from the ledger (src/ledger/usage-rollups.ts).
import { usageQuery, usageRequest, usageSummary } from '../admin/usage.js';
import { pruneUsage, RetentionError } from '../ledger/retention.js';
import { rebuildRunningTotals } from '../ledger/usage-rollups.js';
import { requireOrganization, type CliContext } from './context.js';
import { orUsageError, parseFlags, printJson, requireFlag, UsageError } from './output.js';

export const usageHelp = `gw usage show --org-id O [--from YYYY-MM-DD] [--to YYYY-MM-DD]
              [--group-by day|model|connection|product_user] [--limit N]
  prints the organization's requests, tokens, web searches and cost per group and currency as
  the dashboard API's GET /dashboard/api/orgs/{org_id}/usage answers them: {"group_by","from",
  "to","data"}. --from and --to are UTC days (--to not included; default the last 30 days, at
  most 366); --group-by defaults to day; product users come top spenders first, --limit of
  them (default 100, at most 1000), each row with the user's external_user_id and app_id
  (null: no product user, or one no longer on record).
gw usage prune --before YYYY-MM [--apply]
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
  if (action === 'show') {
    await showUsage(context, rest);
    return;
  }
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

/** The route's query read from the flags, by the route's rules; a refusal names the flag. */
async function showUsage(context: CliContext, argv: string[]): Promise<void> {
  const { values } = parseFlags(argv, {
    'org-id': { type: 'string' },
    from: { type: 'string' },
    to: { type: 'string' },
    'group-by': { type: 'string' },
    limit: { type: 'string' },
  });
  const orgId = requireFlag(values['org-id'], 'org-id');
  const query = usageQuery.parse({
    group_by: values['group-by'],
    from: values.from,
    to: values.to,
    limit: values.limit,
  });
  const request = orUsageError(usageRequest(query, { from: '--from', to: '--to' }));
  await requireOrganization(context, orgId);
  printJson(await usageSummary(context.db, orgId, request));
}
