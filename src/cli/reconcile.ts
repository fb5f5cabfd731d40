// gw reconcile [--org-id ORG] [--repair]: the live Redis accounts against the Postgres ledger.
import { Reconciler } from '../billing/reconcile.js';
import type { CliContext } from './context.js';
import { parseFlags, printJson } from './output.js';

export const reconcileHelp = `gw reconcile [--org-id O] [--repair]
  compares every live account in Redis (wallet balances, org and connection cap spend,
  product-user spend per period) with the Postgres ledger plus the usage not written yet,
  and prints each drift; --repair moves a drifted account by its drift (only a drift
  measured twice in a row, unchanged). Safe while traffic runs; an org settling during every
  measurement is reported "busy" and left alone.`;

export async function reconcileCommand(context: CliContext, argv: string[]): Promise<void> {
  const { values } = parseFlags(argv, {
    'org-id': { type: 'string' },
    repair: { type: 'boolean' },
  });
  const reconciler = new Reconciler(
    context.db,
    context.redis,
    context.keys,
    context.scripts,
    (orgId) => context.wallets.applyOwedChanges(orgId),
  );
  const orgs = await reconciler.run({
    ...(values['org-id'] !== undefined && { orgId: values['org-id'] }),
    repair: values.repair === true,
  });
  const count = (status: string) => orgs.filter((org) => org.status === status).length;
  printJson({
    orgs_checked: orgs.length,
    consistent: count('consistent'),
    drifted: count('drift'),
    repaired: count('repaired'),
    busy: count('busy'),
    orgs: orgs.filter((org) => org.status !== 'consistent'),
  });
}
