// Every Redis key the gateway uses is named here and nowhere else. All keys of one
// organization carry the hash tag {o:<org_id>} so each Lua script touches one cluster slot.

export interface RedisKeys {
  /** Org wallet account: hash { balance, reserved }. */
  wallet(orgId: string): string;
  /**
   * Top-ups committed or committing whose amount the live wallet is still owed: hash
   * transaction id → the `gen` of the wallet owed (wallet-topup-pending.lua, decision 521).
   */
  walletPendingTopUps(orgId: string): string;
  /**
   * Balance sets committed or committing whose difference the live wallet is still owed: the
   * same hash, apart (decision 544) so that a gateway of the previous version, which takes a
   * mark whose top-up it cannot find for one that never committed, never meets one.
   */
  walletPendingSets(orgId: string): string;
  /** Org cap account for one period: hash { spent, reserved }. */
  orgCap(orgId: string, periodKey: string): string;
  /** App-connection cap account (the connection's combined usage) for one period. */
  connectionCap(orgId: string, appConnectionId: string, periodKey: string): string;
  /** A product user's spend in one allowance period: hash { spent, reserved }. */
  userSpend(orgId: string, productUserId: string, periodKey: string): string;
  /** A product user's live credit grants in one currency: hash { loaded, g:<grant_id> → remaining }. */
  userCredits(orgId: string, productUserId: string, currency: string): string;
  /** Expiry of each of the user's grants in one currency: zset grant_id → expiry (ms). */
  userGrants(orgId: string, productUserId: string, currency: string): string;
  /**
   * The user's requests a revocation found in flight, which the revoked grants keep money for:
   * hash request_id → grant ids, comma separated (credits-change.lua; decision 406).
   */
  userDrainingFor(orgId: string, productUserId: string, currency: string): string;
  /** BYOK credentials cooling down after a 429/quota answer: hash credential_id → until (ms). */
  credentialCooldowns(orgId: string): string;
  /** Round-robin counters of credential priority tiers: hash tier → counter. */
  credentialRotation(orgId: string): string;
  /** An API key's request-rate bucket: string, its theoretical arrival time (reserve.lua). */
  keyRate(orgId: string, apiKeyId: string): string;
  /** The request-rate bucket of one product user under one API key. */
  productUserRate(orgId: string, apiKeyId: string, productUserId: string): string;
  /** An API key's bucket of token counts (rate-limit.lua; decision 353). */
  countTokensRate(orgId: string, apiKeyId: string): string;
  /** Marks a token count as counted in its bucket, with a TTL (rate-limit.lua; decision 364). */
  countTokensCounted(orgId: string, requestId: string): string;
  /** The holds on any account key above: zset '<request_id>:<amount_nano>' → expiry (ms). */
  holdExpiries(accountKey: string): string;
  /** Marks a settled request (idempotency), with a TTL. */
  settled(orgId: string, requestId: string): string;
  /** The org's usage stream, drained into Postgres by the batch writer. */
  usageStream(orgId: string): string;
  /** Set of every usage stream key, so writers can find them. */
  usageStreamRegistry(): string;
  /** The org's requests held and not settled yet: hash request_id → what settles it if lost. */
  inFlight(orgId: string): string;
  /** Accounts being rebuilt -> what settles did not charge them meanwhile (account-rebuild.ts). */
  rebuilds(orgId: string): string;
  /** Gateway instances: zset instance_id → last heartbeat (ms). */
  instances(): string;
  /** Held by the instance scanning for dead instances' drafts (one at a time). */
  instanceSweep(): string;
  /** Cached API-key record by key hash (JSON), short TTL. */
  apiKey(keyHash: string): string;
  /** Generation of a cached API key, bumped by each invalidation (fills compare it). */
  apiKeyGeneration(keyHash: string): string;
  /** Pub/sub channel for cross-instance cache invalidation. */
  invalidationChannel(): string;
  /** A dashboard session by the SHA-256 of its id (JSON), expiring when idle. */
  session(handle: string): string;
  /** A dashboard user's sessions: zset session handle → when it expires if unused (ms). */
  userSessions(userId: string): string;
  /**
   * Failed sign-ins in the current window: `account-clients` (e-mail hash; a hash of client
   * address → its failures there, and `all` → every client's, decision 414), or `address`
   * (a client address, every account). `account` is the count before 414, no longer written.
   */
  loginFailures(kind: 'account-clients' | 'address', subject: string): string;
  /** Self-service sign-up attempts from a client address in the current window. */
  signupAttempts(address: string): string;
  /**
   * Requests that may send e-mail or use a link from one (decision 370) in the current window:
   * `recipient-clients` (the SHA-256 of an address: sign-ups, resends, reset requests; a hash
   * of client address → its requests for that address, and `all` → the requests let through,
   * decision 450), and `reset-request` and `link-use` (an e-mailed link followed) by client
   * address. `recipient` is the count before 450, no longer written.
   */
  emailAttempts(kind: 'recipient-clients' | 'reset-request' | 'link-use', subject: string): string;
  /** An OAuth authorization code's grant (JSON) by the SHA-256 of the code, until it expires. */
  oauthCode(codeHash: string): string;
  /** The app connection a used code made, kept a while to catch its replay. */
  oauthCodeUsed(codeHash: string): string;
}

export function createRedisKeys(prefix: string): RedisKeys {
  const org = (orgId: string): string => `${prefix}:{o:${orgId}}`;
  return {
    wallet: (orgId) => `${org(orgId)}:wallet`,
    walletPendingTopUps: (orgId) => `${org(orgId)}:wallet-pending-topups`,
    walletPendingSets: (orgId) => `${org(orgId)}:wallet-pending-sets`,
    orgCap: (orgId, periodKey) => `${org(orgId)}:cap:org:${periodKey}`,
    connectionCap: (orgId, connectionId, periodKey) =>
      `${org(orgId)}:cap:conn:${connectionId}:${periodKey}`,
    userSpend: (orgId, userId, periodKey) => `${org(orgId)}:pu:${userId}:spend:${periodKey}`,
    userCredits: (orgId, userId, currency) => `${org(orgId)}:pu:${userId}:credits:${currency}`,
    userGrants: (orgId, userId, currency) => `${org(orgId)}:pu:${userId}:grants:${currency}`,
    userDrainingFor: (orgId, userId, currency) =>
      `${org(orgId)}:pu:${userId}:draining-for:${currency}`,
    credentialCooldowns: (orgId) => `${org(orgId)}:cred:cooldown`,
    credentialRotation: (orgId) => `${org(orgId)}:cred:rotation`,
    keyRate: (orgId, keyId) => `${org(orgId)}:rate:key:${keyId}`,
    productUserRate: (orgId, keyId, userId) => `${org(orgId)}:rate:key:${keyId}:pu:${userId}`,
    countTokensRate: (orgId, keyId) => `${org(orgId)}:rate:count-tokens:${keyId}`,
    countTokensCounted: (orgId, requestId) => `${org(orgId)}:count-tokens-counted:${requestId}`,
    holdExpiries: (accountKey) => `${accountKey}:resv`,
    settled: (orgId, requestId) => `${org(orgId)}:settled:${requestId}`,
    usageStream: (orgId) => `${org(orgId)}:usage`,
    usageStreamRegistry: () => `${prefix}:usage-streams`,
    inFlight: (orgId) => `${org(orgId)}:in-flight`,
    rebuilds: (orgId) => `${org(orgId)}:rebuilds`,
    instances: () => `${prefix}:instances`,
    instanceSweep: () => `${prefix}:instances:sweep`,
    apiKey: (keyHash) => `${prefix}:apikey:{${keyHash}}`,
    apiKeyGeneration: (keyHash) => `${prefix}:apikey:{${keyHash}}:gen`,
    invalidationChannel: () => `${prefix}:invalidate`,
    session: (handle) => `${prefix}:session:${handle}`,
    userSessions: (userId) => `${prefix}:user-sessions:${userId}`,
    loginFailures: (kind, subject) => `${prefix}:login-fail:${kind}:${subject}`,
    signupAttempts: (address) => `${prefix}:signup-attempts:${address}`,
    emailAttempts: (kind, subject) => `${prefix}:email-attempts:${kind}:${subject}`,
    oauthCode: (codeHash) => `${prefix}:oauth-code:{${codeHash}}`,
    oauthCodeUsed: (codeHash) => `${prefix}:oauth-code:{${codeHash}}:used`,
  };
}

/**
 * The org whose usage stream `key` is (as `usageStream` names it), or null for another key.
 * The inverse of the builder, so any org id comes back whole, braces and all.
 */
export function orgOfUsageStream(keys: RedisKeys, key: string): string | null {
  const [head, tail] = keys.usageStream('\0').split('\0') as [string, string];
  if (key.length < head.length + tail.length) return null;
  if (!key.startsWith(head) || !key.endsWith(tail)) return null;
  return key.slice(head.length, key.length - tail.length);
}

/** The consumer group every gateway instance's batch writer joins. */
export const USAGE_CONSUMER_GROUP = 'usage-writers';
