// Spending caps at every level: the one service `gw cap` and the dashboard API share. One
// active rule per target (an organization, an app connection, a product user); setting again
// updates it, clearing retires it. Every change is audited in its transaction, then every
// gateway instance drops its cached rules (and, for a connection, its keys' cached settings)
// before the caller is answered, so the next request anywhere sees it.
import { recordAudit, type Actor } from '../audit/audit.js';
import { apiKeySharedCache } from '../auth/api-key-store.js';
import type { CreditMode, OverrunPolicy } from '../billing/modes.js';
import { capRuleTargetColumn } from '../billing/cap-policies.js';
import type { InvalidationPublisher } from '../cache/invalidation.js';
import { withTransaction, type DbClient, type DbPool } from '../db/pool.js';
import { newId } from '../ids.js';
import {
  assertAmountInRange,
  formatNano,
  formatNumeric,
  nanoToNumeric,
  numericToNano,
  plainAmount,
  SETTLEMENT_CURRENCY,
} from '../money.js';
import type { RedisClient } from '../redis/connect.js';
import type { RedisKeys } from '../redis/keys.js';
import { RULE_COLUMNS, ruleView, type ActiveRuleRow, type CapRuleView } from './cap-rule-views.js';
import { apiKeyHashes, applyConnectionSettings } from './connections.js';

export type CapTarget =
  | { readonly scope: 'org'; readonly orgId: string }
  | { readonly scope: 'app_connection'; readonly appConnectionId: string }
  | { readonly scope: 'product_user'; readonly productUserId: string };

export type CapScope = CapTarget['scope'];

/**
 * What to set. Optional fields left undefined keep their stored value; `null` removes it.
 * `creditMode` / `overrunPolicy` are the connection's settings on an app_connection cap and
 * the user's overrides of them on a product_user cap (null: inherit the connection's).
 */
export interface CapSettings {
  /**
   * null only on an app_connection cap: no combined cap, only the per-user default.
   * Undefined keeps the amount of the target's cap; a target without one needs it (315).
   */
  readonly amountNano?: bigint | null;
  readonly currency: string;
  /** app_connection only: the default cap of each of its product users. */
  readonly perUserAmountNano?: bigint | null;
  readonly creditMode?: CreditMode | null;
  readonly overrunPolicy?: OverrunPolicy | null;
  /** app_connection only. */
  readonly requiresProductUser?: boolean;
}

/** A cap that cannot be set as asked, or a target that does not exist (`notFound`). */
export class CapTargetError extends Error {
  override readonly name = 'CapTargetError';
  constructor(
    message: string,
    readonly notFound = false,
  ) {
    super(message);
  }
}

/**
 * A cap set that must give its amount: the target has no cap yet to keep one from, or
 * nothing else is set. `reason` says which; the CLI and the API each name their own field.
 */
export class CapAmountRequiredError extends CapTargetError {
  constructor(readonly reason: string) {
    super(`amount is required: ${reason}`);
  }
}

/** A cap set that sets nothing: each caller names what its scope's cap set takes. */
export class CapNothingToSetError extends CapAmountRequiredError {
  constructor() {
    super('nothing else is set');
  }
}

/** A target and its active cap (null: none). A connection's also carries its settings. */
export interface CapState {
  scope: CapScope;
  org_id: string;
  app_connection_id: string | null;
  product_end_user_id: string | null;
  cap: CapRuleView | null;
  connection?: {
    credit_mode: CreditMode;
    overrun_policy: OverrunPolicy;
    requires_product_user: boolean;
  };
  /**
   * On a product user: the cap that caps them (null: none), their own or else the per-user
   * default of the connection they last used, as admission and the profile apply it
   * (userAllowancePolicy). `cap` is only their own: null there is not "not capped" (decision 587).
   */
  effective?: EffectiveCap | null;
}

/** The cap that governs a product user, and where it comes from. */
export interface EffectiveCap {
  source: 'product_user' | 'app_connection_per_user_default';
  cap_rule_id: string;
  /** The connection whose per-user default it is (null: the user's own cap). */
  app_connection_id: string | null;
  amount: string;
  currency: string;
  period: string;
}

/** What goes with a cap change: every instance's caches, and the marks a cap set has passed. */
export interface CapInvalidation {
  capsChanged(change: { readonly connectionKeyHashes: readonly string[] | null }): Promise<void>;
  /**
   * In the transaction that sets a cap (`client`), after the rule is written: fires the
   * threshold marks the period's spend has already reached (src/usage-events/cap-marks.ts;
   * decision 307), so the cap and its marks commit together or not at all. Left out where no
   * events are wanted.
   */
  capSet?(client: DbClient, orgId: string, target: CapTarget): Promise<CapAgainstSpend | undefined>;
}

/** A level's cap amount and what its period has spent, as the cap's transaction found them. */
export interface CapAgainstSpend {
  readonly capNano: bigint;
  readonly spentNano: bigint;
  /** Whether the cap refuses what it does not cover (a product user's credit mode enforce). */
  readonly enforced: boolean;
}

/** A set cap's answer: the level, and what the writer should know (the cap is used up). */
export type CapSetState = CapState & { readonly warnings: string[] };

/**
 * The warning of a cap set at or below what its level has spent this period: every request it
 * governs is refused until the period turns or the cap is raised (decision 481); a product
 * user's once their credits are spent, and none where their credit mode refuses nothing (484).
 */
export function capUsedUpWarnings(target: CapTarget, found: CapAgainstSpend | undefined): string[] {
  if (!found || !found.enforced || found.spentNano < found.capNano) return [];
  const level =
    target.scope === 'org'
      ? 'the organization has'
      : target.scope === 'app_connection'
        ? 'the connection has'
        : 'the product user has';
  // A product user's credits pay past their cap (lua/reserve.lua): refused once they are spent.
  const refused =
    target.scope === 'product_user'
      ? "refused once the user's credits are spent, until the user's period"
      : 'refused until the month';
  return [
    `the cap (${formatNano(found.capNano)} USD) is not above what ${level} spent this period ` +
      `(${formatNano(found.spentNano)} USD): every request under it is ${refused} turns or the cap ` +
      'is raised',
  ];
}

/**
 * The shared Redis copies of the connection's keys go first, so no instance refills its cache
 * from a stale one; then this instance's caches, then the others' over pub/sub (`invalidations`).
 */
export function capInvalidation(
  redis: RedisClient,
  keys: RedisKeys,
  invalidations: InvalidationPublisher,
): CapInvalidation {
  return {
    async capsChanged({ connectionKeyHashes }) {
      if (!connectionKeyHashes) return invalidations.publish({ kind: 'caps' });
      await apiKeySharedCache(redis, keys).invalidate([...connectionKeyHashes]);
      await invalidations.publish({ kind: 'caps' }, { kind: 'all-api-keys' });
    },
  };
}

const conflictTarget: Record<CapScope, string> = {
  org: `(org_id) WHERE scope = 'org' AND status = 'active'`,
  app_connection: `(app_connection_id) WHERE scope = 'app_connection' AND status = 'active'`,
  product_user: `(product_user_id) WHERE scope = 'product_user' AND status = 'active'`,
};

const targetId = (target: CapTarget): string =>
  target.scope === 'org'
    ? target.orgId
    : target.scope === 'app_connection'
      ? target.appConnectionId
      : target.productUserId;

/** The target's cap and organization, or null when the target does not exist. */
export async function readCap(
  db: Pick<DbPool, 'query'>,
  target: CapTarget,
): Promise<CapState | null> {
  const orgId = await owningOrg(db, target);
  if (orgId === null) return null;
  return capState(db, target, orgId);
}

/**
 * Sets the target's active monthly cap, or changes it: what `settings` leave out is kept.
 * Throws CapTargetError (CapAmountRequiredError among them), AmountRangeError.
 */
export async function setCapAs(
  db: DbPool,
  invalidation: CapInvalidation,
  actor: Actor,
  target: CapTarget,
  settings: CapSettings,
): Promise<CapSetState> {
  checkCapSettings(target.scope, settings);
  const { state, connectionId, found } = await withTransaction(db, (client) =>
    writeCapIn(client, invalidation, actor, target, settings),
  );
  await invalidation.capsChanged({
    connectionKeyHashes: connectionId ? await apiKeyHashes(db, { connectionId }) : null,
  });
  return { ...state, warnings: capUsedUpWarnings(target, found) };
}

/**
 * setCapAs's writes, in the caller's transaction (`client`): the rule, the connection's
 * settings, the audit entry and the marks (`invalidation.capSet`). The caller checked the
 * settings (checkCapSettings) and tells every instance after its commit, unless nothing can
 * have cached the target yet (a connection made in that same transaction, decision 415).
 */
export async function writeCapIn(
  client: DbClient,
  invalidation: Pick<CapInvalidation, 'capSet'>,
  actor: Actor,
  target: CapTarget,
  settings: CapSettings,
): Promise<{
  state: CapState;
  connectionId: string | null;
  /** The cap against its period's spend (undefined: no marks wanted, or no amount capped). */
  found: CapAgainstSpend | undefined;
}> {
  const orgId = await owningOrg(client, target, true);
  if (orgId === null) throw missing(target);
  const current = await activeRule(client, target, true);
  if (settings.amountNano === undefined && !current) {
    throw new CapAmountRequiredError(await noCapYet(client, target));
  }
  const amountNano = givenOrStored(settings.amountNano, current?.amount);
  const perUserAmountNano = givenOrStored(settings.perUserAmountNano, current?.per_user_amount);
  if (amountNano === null && perUserAmountNano === null) {
    throw new CapTargetError(
      'a connection cap needs an amount or a per-user amount (clear the cap to remove both)',
    );
  }
  const onUser = target.scope === 'product_user';
  const keep = (value: unknown): boolean => value === undefined;
  const { rows } = await client.query<{ id: string }>(
    `INSERT INTO cap_rules (id, org_id, scope, app_connection_id, product_user_id, amount,
                           per_user_amount, currency, credit_mode, overrun_policy)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
     ON CONFLICT ${conflictTarget[target.scope]} DO UPDATE SET
       amount = EXCLUDED.amount,
       per_user_amount = EXCLUDED.per_user_amount,
       currency = EXCLUDED.currency,
       credit_mode = CASE WHEN $11 THEN cap_rules.credit_mode ELSE EXCLUDED.credit_mode END,
       overrun_policy = CASE WHEN $12 THEN cap_rules.overrun_policy ELSE EXCLUDED.overrun_policy END,
       updated_at = now()
     RETURNING id`,
    [
      newId('cap'),
      orgId,
      target.scope,
      target.scope === 'app_connection' ? target.appConnectionId : null,
      onUser ? target.productUserId : null,
      amountNano === null ? null : nanoToNumeric(amountNano),
      perUserAmountNano === null ? null : nanoToNumeric(perUserAmountNano),
      settings.currency,
      onUser ? (settings.creditMode ?? null) : null,
      onUser ? (settings.overrunPolicy ?? null) : null,
      !onUser || keep(settings.creditMode),
      !onUser || keep(settings.overrunPolicy),
    ],
  );
  const connectionId = target.scope === 'app_connection' ? target.appConnectionId : null;
  if (connectionId) {
    await applyConnectionSettings(client, connectionId, {
      ...(settings.creditMode && { credit_mode: settings.creditMode }),
      ...(settings.overrunPolicy && { overrun_policy: settings.overrunPolicy }),
      ...(settings.requiresProductUser !== undefined && {
        requires_product_user: settings.requiresProductUser,
      }),
    });
  }
  const state = await capState(client, target, orgId);
  await recordAudit(client, {
    orgId,
    userId: actor.userId,
    action: 'cap.set',
    objectType: 'cap_rule',
    objectId: rows[0]!.id,
    details: {
      scope: target.scope,
      target_id: targetId(target),
      amount: state.cap?.amount ?? null,
      per_user_amount: state.cap?.per_user_amount ?? null,
      ...(settings.creditMode !== undefined && { credit_mode: settings.creditMode }),
      ...(settings.overrunPolicy !== undefined && { overrun_policy: settings.overrunPolicy }),
      ...(settings.requiresProductUser !== undefined && {
        requires_product_user: settings.requiresProductUser,
      }),
    },
  });
  const found = await invalidation.capSet?.(client, orgId, target);
  return { state, connectionId, found };
}

/**
 * Retires the target's active cap: its requests are no longer capped at this level. Clearing
 * a target without a cap changes nothing and writes no audit entry. Throws CapTargetError.
 */
export async function clearCapAs(
  db: DbPool,
  invalidation: CapInvalidation,
  actor: Actor,
  target: CapTarget,
): Promise<CapState> {
  const { state, cleared } = await withTransaction(db, async (client) => {
    const orgId = await owningOrg(client, target, true);
    if (orgId === null) throw missing(target);
    const current = await activeRule(client, target, true);
    if (current) {
      await client.query(
        `UPDATE cap_rules SET status = 'inactive', updated_at = now() WHERE id = $1`,
        [current.id],
      );
      await recordAudit(client, {
        orgId,
        userId: actor.userId,
        action: 'cap.clear',
        objectType: 'cap_rule',
        objectId: current.id,
        details: { scope: target.scope, target_id: targetId(target) },
      });
    }
    return { state: await capState(client, target, orgId), cleared: current !== undefined };
  });
  if (cleared) {
    // A connection's keys carry no cap of their own: only the rules need dropping.
    await invalidation.capsChanged({ connectionKeyHashes: null });
  }
  return state;
}

/**
 * Refuses settings no cap of `scope` can take (before anything is read or written: the CLI
 * checks them before it creates the product user a cap names).
 */
export function checkCapSettings(scope: CapScope, settings: CapSettings): void {
  const target = { scope } as const;
  // A cap limits what costs add up to, and every cost is in the settlement currency.
  if (settings.currency !== SETTLEMENT_CURRENCY) {
    throw new CapTargetError(
      `caps are in ${SETTLEMENT_CURRENCY}, the currency costs are charged in (got ${settings.currency})`,
    );
  }
  if (settings.amountNano === null && target.scope !== 'app_connection') {
    throw new CapTargetError(`a ${scopeNoun(target)} cap needs an amount`);
  }
  if (
    settings.amountNano === undefined &&
    settings.perUserAmountNano === undefined &&
    settings.creditMode === undefined &&
    settings.overrunPolicy === undefined &&
    settings.requiresProductUser === undefined
  ) {
    throw new CapNothingToSetError();
  }
  if (typeof settings.amountNano === 'bigint') assertAmountInRange(settings.amountNano, 'the cap');
  if (typeof settings.perUserAmountNano === 'bigint') {
    assertAmountInRange(settings.perUserAmountNano, 'the per-user cap');
  }
  if (target.scope !== 'app_connection') {
    if (settings.perUserAmountNano !== undefined || settings.requiresProductUser !== undefined) {
      throw new CapTargetError(
        'a per-user amount and the attribution requirement belong to a connection cap',
      );
    }
  }
  if (target.scope === 'org' && (settings.creditMode || settings.overrunPolicy)) {
    throw new CapTargetError('an org cap takes only an amount');
  }
  if (
    target.scope === 'app_connection' &&
    (settings.creditMode === null || settings.overrunPolicy === null)
  ) {
    throw new CapTargetError('a connection always has a credit mode and an overrun policy');
  }
}

async function capState(
  client: Pick<DbPool, 'query'>,
  target: CapTarget,
  orgId: string,
): Promise<CapState> {
  const rule = await activeRule(client, target, false);
  const state: CapState = {
    scope: target.scope,
    org_id: orgId,
    app_connection_id: target.scope === 'app_connection' ? target.appConnectionId : null,
    product_end_user_id: target.scope === 'product_user' ? target.productUserId : null,
    cap: rule ? ruleView(rule) : null,
  };
  if (target.scope === 'product_user') {
    state.effective = state.cap
      ? {
          source: 'product_user',
          cap_rule_id: state.cap.cap_rule_id,
          app_connection_id: null,
          amount: state.cap.amount!,
          currency: state.cap.currency,
          period: state.cap.period,
        }
      : await perUserDefault(client, target.productUserId);
  }
  if (target.scope === 'app_connection') {
    const { rows } = await client.query<NonNullable<CapState['connection']>>(
      'SELECT credit_mode, overrun_policy, requires_product_user FROM app_connections WHERE id = $1',
      [target.appConnectionId],
    );
    state.connection = rows[0]!;
  }
  return state;
}

async function activeRule(
  client: Pick<DbPool, 'query'>,
  target: CapTarget,
  lock: boolean,
): Promise<ActiveRuleRow | undefined> {
  const { rows } = await client.query<ActiveRuleRow>(
    `SELECT ${RULE_COLUMNS} FROM cap_rules
      WHERE scope = $1 AND ${capRuleTargetColumn[target.scope]} = $2 AND status = 'active'
      ${lock ? 'FOR UPDATE' : ''}`,
    [target.scope, targetId(target)],
  );
  return rows[0];
}

/**
 * The organization that owns the target, or null. With `lock`, the target's row is locked
 * for the transaction, so two changes of one target's cap run one after the other.
 */
async function owningOrg(
  client: Pick<DbPool, 'query'>,
  target: CapTarget,
  lock = false,
): Promise<string | null> {
  const table =
    target.scope === 'org'
      ? 'organizations'
      : target.scope === 'app_connection'
        ? 'app_connections'
        : 'product_users';
  const column = target.scope === 'org' ? 'id' : 'org_id';
  const { rows } = await client.query<{ org_id: string }>(
    `SELECT ${column} AS org_id FROM ${table} WHERE id = $1 ${lock ? 'FOR NO KEY UPDATE' : ''}`,
    [targetId(target)],
  );
  return rows[0]?.org_id ?? null;
}

/** A setting as it is to be stored: the one given, or (undefined) the stored one kept. */
function givenOrStored(
  given: bigint | null | undefined,
  stored: string | null | undefined,
): bigint | null {
  if (given !== undefined) return given;
  return stored == null ? null : numericToNano(stored);
}

/** How messages name the target's level: `org`, `app connection`, `product user`. */
const scopeNoun = (target: Pick<CapTarget, 'scope'>): string => target.scope.replace('_', ' ');

/**
 * The per-user default of the connection the product user last used, which caps a user
 * without a cap of their own (null: none).
 */
async function perUserDefault(
  client: Pick<DbPool, 'query'>,
  productUserId: string,
): Promise<EffectiveCap | null> {
  const { rows } = await client.query<{
    id: string;
    app_connection_id: string;
    per_user_amount: string;
    currency: string;
    period: string;
  }>(
    `SELECT r.id, r.app_connection_id, r.per_user_amount::text, r.currency, r.period
       FROM product_users u
       JOIN cap_rules r ON r.scope = 'app_connection' AND r.status = 'active'
                       AND r.app_connection_id = u.last_app_connection_id
      WHERE u.id = $1 AND r.per_user_amount IS NOT NULL`,
    [productUserId],
  );
  const rule = rows[0];
  if (!rule) return null;
  return {
    source: 'app_connection_per_user_default',
    cap_rule_id: rule.id,
    app_connection_id: rule.app_connection_id,
    amount: formatNumeric(rule.per_user_amount),
    currency: rule.currency.trim(),
    period: rule.period,
  };
}

/**
 * Why a cap set needs an amount: the target has no cap of its own. A product user may still
 * be capped by the per-user default of the connection they last used: said, so "no cap" is not
 * read as "not capped" (changing that default is a connection cap's --per-user-amount).
 */
async function noCapYet(client: Pick<DbPool, 'query'>, target: CapTarget): Promise<string> {
  if (target.scope !== 'product_user') return `the ${scopeNoun(target)} has no cap yet`;
  const fallback = await perUserDefault(client, target.productUserId);
  if (!fallback) return 'the product user has no cap of their own yet';
  const amount = plainAmount(numericToNano(fallback.amount));
  return `the product user has no cap of their own yet, only their connection's per-user default (${amount} ${fallback.currency} a month)`;
}

function missing(target: CapTarget): CapTargetError {
  return new CapTargetError(`no ${scopeNoun(target)} ${targetId(target)}`, true);
}
