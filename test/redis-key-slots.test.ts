// Every Redis key stays usable on a Redis Cluster: the keys one command or script touches
// together hash to one slot. Computed here for every key builder and every script's KEYS, so a
// new key or script without its hash tag fails on a single Redis too; the `cluster` vitest
// project then runs the money, BYOK and durability tests on a real cluster, which refuses any
// call that crosses slots (CROSSSLOT) — test/cluster/redis-cluster.test.ts shows it does.
import { describe, expect, it } from 'vitest';
import { keySlot } from '../src/redis/connect.js';
import { createRedisKeys, orgOfUsageStream, type RedisKeys } from '../src/redis/keys.js';
import { scriptSpecs, type ScriptName } from '../src/redis/scripts.js';

const keys = createRedisKeys('t-slots');
const ORGS = ['org_01JZ8Q3V5X0000000000000000', 'org_b', 'org_with}brace{', 'org_ünïcode'];

/**
 * How each key builder must hash. `org`: every key of one org in the org's slot (one script
 * moves them together). `pair`: the keys of one entry together (a fill script and MGET take
 * both). `alone`: never in a command or transaction with another key. A builder without a row
 * fails the test: say where a new key must live before using it.
 */
const builderScopes: Record<keyof RedisKeys, 'org' | 'pair' | 'alone'> = {
  wallet: 'org',
  // Beside the wallet: wallet-topup-pending.lua and wallet-topup-apply.lua take both.
  walletPendingTopUps: 'org',
  // Beside the wallet too: a set's marks (decision 544), read with the top-ups' in one pipeline.
  walletPendingSets: 'org',
  orgCap: 'org',
  connectionCap: 'org',
  userSpend: 'org',
  userCredits: 'org',
  userGrants: 'org',
  userDrainingFor: 'org',
  credentialCooldowns: 'org',
  credentialRotation: 'org',
  holdExpiries: 'org',
  // Request-rate buckets, read and written by reserve.lua with the holds.
  keyRate: 'org',
  productUserRate: 'org',
  // A key's bucket of token counts: rate-limit.lua alone takes it; in the org's slot with its
  // other buckets.
  countTokensRate: 'org',
  // Its counts' markers: rate-limit.lua takes one with the bucket.
  countTokensCounted: 'org',
  settled: 'org',
  usageStream: 'org',
  // Written by reserve.lua, removed by settle.lua, beside the holds.
  inFlight: 'org',
  // Listed by a rebuild, grown by settle.lua, read by the cut with the stream.
  rebuilds: 'org',
  // The instances' heartbeats: ZADD / ZRANGEBYSCORE alone (src/billing/lost-requests.ts).
  instances: 'alone',
  // SET NX alone; sweep-lock.lua takes it alone (compare, then renew or delete).
  instanceSweep: 'alone',
  // One set of every stream: SADD/SMEMBERS alone (the writers read streams slot by slot).
  usageStreamRegistry: 'alone',
  apiKey: 'pair',
  apiKeyGeneration: 'pair',
  // A pub/sub channel, not a key: PUBLISH reaches every node of a cluster.
  invalidationChannel: 'alone',
  session: 'alone',
  // ZADD / ZRANGE / ZREM alone; the sessions it names are deleted one command each
  // (src/accounts/sessions.ts): they hash anywhere.
  userSessions: 'alone',
  // Counted per key, one transaction per key (src/accounts/login-throttle.ts).
  loginFailures: 'alone',
  // One key per client address, in a transaction of its own.
  signupAttempts: 'alone',
  emailAttempts: 'alone',
  // An authorization code and its replay marker: taken together by oauth-take-code.lua.
  oauthCode: 'pair',
  oauthCodeUsed: 'pair',
};

/** Every key an org's builders make, for one org. */
function orgKeys(orgId: string): string[] {
  const accounts = [
    keys.wallet(orgId),
    keys.orgCap(orgId, '2025-06'),
    keys.connectionCap(orgId, 'conn_1', '2025-06'),
    keys.userSpend(orgId, 'pu_1', '2025-06-01'),
  ];
  return [
    ...accounts,
    ...accounts.map((account) => keys.holdExpiries(account)),
    keys.userCredits(orgId, 'pu_1', 'USD'),
    keys.userGrants(orgId, 'pu_1', 'EUR'),
    keys.credentialCooldowns(orgId),
    keys.credentialRotation(orgId),
    keys.settled(orgId, 'req_1'),
    keys.walletPendingTopUps(orgId),
    keys.usageStream(orgId),
    keys.inFlight(orgId),
    keys.keyRate(orgId, 'key_1'),
    keys.productUserRate(orgId, 'key_1', 'pu_1'),
  ];
}

/**
 * Each script's KEYS, named as in scriptSpecs, built the way its callers build them (for the
 * request scripts: src/billing/redis-budget-store.ts; unused accounts get a placeholder in the
 * org's slot). A script or a KEY without a row fails the test.
 */
const scriptKeys: { [N in ScriptName]: (orgId: string) => Record<string, string> } = {
  reserve: (orgId) => ({
    ...requestAccountKeys(orgId),
    cred_cooldowns: keys.credentialCooldowns(orgId),
    cred_rotation: keys.credentialRotation(orgId),
    in_flight: keys.inFlight(orgId),
    key_rate: keys.keyRate(orgId, 'key_1'),
    user_rate: keys.productUserRate(orgId, 'key_1', 'pu_1'),
    previous_spend: keys.userSpend(orgId, 'pu_1', '2025-05-01'),
    previous_spend_expiries: keys.holdExpiries(keys.userSpend(orgId, 'pu_1', '2025-05-01')),
  }),
  release: (orgId) => {
    const { user_credits: _credits, user_grants: _grants, ...accounts } = requestAccountKeys(orgId);
    return {
      ...accounts,
      in_flight: keys.inFlight(orgId),
      key_rate: keys.keyRate(orgId, 'key_1'),
      user_rate: keys.productUserRate(orgId, 'key_1', 'pu_1'),
    };
  },
  rateLimit: (orgId) => ({
    bucket: keys.countTokensRate(orgId, 'key_1'),
    counted: keys.countTokensCounted(orgId, 'req_1'),
  }),
  failover: (orgId) => ({
    wallet: keys.wallet(orgId),
    wallet_expiries: keys.holdExpiries(keys.wallet(orgId)),
    cred_cooldowns: keys.credentialCooldowns(orgId),
    cred_rotation: keys.credentialRotation(orgId),
    usage_stream: keys.usageStream(orgId),
    in_flight: keys.inFlight(orgId),
  }),
  holdRenew: (orgId) => {
    const accounts = requestAccountKeys(orgId);
    return {
      wallet_expiries: accounts.wallet_expiries!,
      org_cap_expiries: accounts.org_cap_expiries!,
      conn_cap_expiries: accounts.conn_cap_expiries!,
      user_spend_expiries: accounts.user_spend_expiries!,
      in_flight: keys.inFlight(orgId),
      user_credits: accounts.user_credits!,
      draining_for: keys.userDrainingFor(orgId, 'pu_1', 'USD'),
    };
  },
  settle: (orgId) => ({
    ...requestAccountKeys(orgId),
    settled_marker: keys.settled(orgId, 'req_1'),
    usage_stream: keys.usageStream(orgId),
    in_flight: keys.inFlight(orgId),
    rebuilds: keys.rebuilds(orgId),
    draining_for: keys.userDrainingFor(orgId, 'pu_1', 'USD'),
  }),
  accountLoad: (orgId) => ({
    account: keys.orgCap(orgId, '2025-06'),
    expiries: keys.holdExpiries(keys.orgCap(orgId, '2025-06')),
  }),
  accountRebuild: (orgId) => ({
    account: keys.orgCap(orgId, '2025-06'),
    expiries: keys.holdExpiries(keys.orgCap(orgId, '2025-06')),
    rebuilds: keys.rebuilds(orgId),
  }),
  accountRebuildUser: (orgId) => ({
    account: keys.userSpend(orgId, 'pu_1', '2025-06-01'),
    expiries: keys.holdExpiries(keys.userSpend(orgId, 'pu_1', '2025-06-01')),
    rebuilds: keys.rebuilds(orgId),
    user_credits: keys.userCredits(orgId, 'pu_1', 'USD'),
    user_grants: keys.userGrants(orgId, 'pu_1', 'USD'),
  }),
  creditsLoad: (orgId) => ({
    user_credits: keys.userCredits(orgId, 'pu_1', 'USD'),
    user_grants: keys.userGrants(orgId, 'pu_1', 'USD'),
  }),
  creditsChange: (orgId) => ({
    user_credits: keys.userCredits(orgId, 'pu_1', 'USD'),
    user_grants: keys.userGrants(orgId, 'pu_1', 'USD'),
    user_spend: keys.userSpend(orgId, 'pu_1', '2025-06-01'),
    user_spend_expiries: keys.holdExpiries(keys.userSpend(orgId, 'pu_1', '2025-06-01')),
    previous_spend: keys.userSpend(orgId, 'pu_1', '2025-05-01'),
    draining_for: keys.userDrainingFor(orgId, 'pu_1', 'USD'),
    previous_spend_expiries: keys.holdExpiries(keys.userSpend(orgId, 'pu_1', '2025-05-01')),
    next_spend: keys.userSpend(orgId, 'pu_1', '2025-07-01'),
    next_spend_expiries: keys.holdExpiries(keys.userSpend(orgId, 'pu_1', '2025-07-01')),
  }),
  walletTopUpPending: (orgId) => ({
    wallet: keys.wallet(orgId),
    pending: keys.walletPendingTopUps(orgId),
  }),
  walletTopUpApply: (orgId) => ({
    wallet: keys.wallet(orgId),
    pending: keys.walletPendingTopUps(orgId),
  }),
  accountCorrect: (orgId) => ({ account: keys.userSpend(orgId, 'pu_1', '2025-06-01') }),
  // The API-key cache's entry (src/auth/api-key-store.ts), by key hash rather than org.
  cacheFill: (keyHash) => ({
    value: keys.apiKey(keyHash),
    generation: keys.apiKeyGeneration(keyHash),
  }),
  // An authorization code's two keys (src/oauth/codes.ts), by the code's hash.
  oauthTakeCode: (codeHash) => ({
    code: keys.oauthCode(codeHash),
    used: keys.oauthCodeUsed(codeHash),
  }),
  // The lost-request sweep's lock (src/billing/lost-requests.ts), one key, not an org's.
  sweepLock: () => ({ lock: keys.instanceSweep() }),
};

function requestAccountKeys(orgId: string): Record<string, string> {
  const wallet = keys.wallet(orgId);
  const orgCap = keys.orgCap(orgId, '2025-06');
  const unused = keys.orgCap(orgId, 'unused');
  const userSpend = keys.userSpend(orgId, 'pu_1', '2025-06-01');
  return {
    wallet,
    wallet_expiries: keys.holdExpiries(wallet),
    org_cap: orgCap,
    org_cap_expiries: keys.holdExpiries(orgCap),
    conn_cap: unused,
    conn_cap_expiries: keys.holdExpiries(unused),
    user_spend: userSpend,
    user_spend_expiries: keys.holdExpiries(userSpend),
    user_credits: keys.userCredits(orgId, 'pu_1', 'USD'),
    user_grants: keys.userGrants(orgId, 'pu_1', 'USD'),
  };
}

const slotsOf = (found: readonly string[]): Set<number> => new Set(found.map(keySlot));

describe('Redis Cluster hash slots', () => {
  it('computes the slots Redis Cluster does (CRC16 of the hash tag)', () => {
    // Values from the Redis Cluster specification and `CLUSTER KEYSLOT`.
    expect(keySlot('123456789')).toBe(12739);
    expect(keySlot('{user1000}.following')).toBe(keySlot('{user1000}.followers'));
    expect(keySlot('{o:org_b}')).toBe(keySlot('t-slots:{o:org_b}:wallet'));
  });

  it('classifies every key builder', () => {
    expect(Object.keys(keys).sort()).toEqual(Object.keys(builderScopes).sort());
  });

  it("keeps every key of an org in the org's slot, whatever the org id", () => {
    for (const orgId of ORGS) {
      expect(slotsOf(orgKeys(orgId))).toEqual(new Set([keySlot(keys.wallet(orgId))]));
    }
    // …and the orgs themselves spread over the slots.
    expect(slotsOf(ORGS.map((orgId) => keys.wallet(orgId))).size).toBe(ORGS.length);
  });

  it('reads the org back from its usage stream key, whatever the org id', () => {
    for (const orgId of ORGS) expect(orgOfUsageStream(keys, keys.usageStream(orgId))).toBe(orgId);
    expect(orgOfUsageStream(keys, keys.wallet('org_b'))).toBeNull();
    expect(orgOfUsageStream(createRedisKeys('other'), keys.usageStream('org_b'))).toBeNull();
  });

  it('keeps the two keys of an API-key cache entry, and of an authorization code, in one slot', () => {
    for (const hash of ['a'.repeat(64), 'f00d'.repeat(16)]) {
      expect(keySlot(keys.apiKey(hash))).toBe(keySlot(keys.apiKeyGeneration(hash)));
      expect(keySlot(keys.oauthCode(hash))).toBe(keySlot(keys.oauthCodeUsed(hash)));
    }
  });

  it('builds every key a script touches in one slot', () => {
    expect(Object.keys(scriptKeys).sort()).toEqual(Object.keys(scriptSpecs).sort());
    for (const [name, spec] of Object.entries(scriptSpecs) as Array<
      [ScriptName, (typeof scriptSpecs)[ScriptName]]
    >) {
      for (const id of ORGS) {
        const built = scriptKeys[name](id);
        expect(Object.keys(built).sort(), name).toEqual([...spec.keys].sort());
        expect(slotsOf(Object.values(built)).size, `${name} for ${id}`).toBe(1);
      }
    }
  });
});
