// The usage record: what a settled request leaves in the ledger. It travels as a Redis
// stream entry (flat string fields) and lands as one row of usage_records.
import { StreamEntryFields } from './stream-entry.js';

export type UsageStatus = 'completed' | 'incomplete' | 'upstream_error' | 'client_aborted';

/** A cap mark (80% or 100%) that a settle's charge took an account past (settle.lua). */
export interface ThresholdCrossing {
  /** Whose cap: the product user's allowance, the org's or the app connection's. */
  readonly scope: 'user' | 'org' | 'conn';
  readonly threshold: '0.8' | '1.0';
  readonly spentAfterNano: bigint;
  readonly capNano: bigint;
  /** The account's period key (its start, epoch ms). */
  readonly periodKey: string;
}

export interface UsageRecord {
  readonly requestId: string;
  /** Settle time; part of the ledger's primary key, so it is fixed before the stream. */
  readonly createdAt: Date;
  readonly orgId: string;
  readonly appId: string;
  readonly appConnectionId: string;
  readonly apiKeyId: string;
  /** The OAuth client of an OAuth token's request (null: an API key's). */
  readonly oauthClientId?: string | null;
  readonly productUserId: string | null;
  readonly model: string;
  readonly vendor: string;
  readonly route: 'system' | 'byok';
  readonly credentialId: string | null;
  readonly stream: boolean;
  readonly status: UsageStatus;
  readonly upstreamStatus: number | null;
  readonly inputTokens: number;
  readonly outputTokens: number;
  /** Parts of inputTokens the vendor's prompt cache wrote (of which for an hour) and read
   * (absent: none, and on records from before decision 324). */
  readonly cacheWriteTokens?: number;
  readonly cacheWrite1hTokens?: number;
  readonly cacheReadTokens?: number;
  /** Searches the vendor's web search server tool made (absent: none; decision 327). */
  readonly webSearchRequests?: number;
  readonly currency: string;
  readonly sellCostNano: bigint;
  readonly vendorCostNano: bigint;
  readonly walletCostNano: bigint;
  readonly reservedNano: bigint;
  readonly latencyMs: number;
  /** Why the request ended (the charging policy's reason; null on records from before it). */
  readonly endReason?: string | null;
  /** True when the built-in mock vendor served it (never real, billable traffic). */
  readonly servedByMock?: boolean;
  /** Set by settle.lua: the part of sell_cost that credit grants paid, and which grants. */
  readonly creditsCostNano?: bigint;
  readonly creditConsumption?: ReadonlyArray<{
    readonly grantId: string;
    readonly amountNano: bigint;
  }>;
  /** Set by settle.lua for webhook events: the cap marks this charge crossed. */
  readonly thresholdCrossings?: readonly ThresholdCrossing[];
  /** Set by settle.lua when the wallet paid: its balance right after this charge. */
  readonly walletBalanceAfterNano?: bigint | null;
}

/** "grant_a:120,grant_b:5" (as settle.lua writes it) → consumption entries. */
function parseConsumption(text: string): Array<{ grantId: string; amountNano: bigint }> {
  if (text === '') return [];
  return text.split(',').map((part) => {
    const separator = part.lastIndexOf(':');
    return { grantId: part.slice(0, separator), amountNano: BigInt(part.slice(separator + 1)) };
  });
}

/**
 * Every field name a usage record entry of this version may carry: inside the packed `record`
 * (or beside it, as records of older versions were written), and those settle.lua appends.
 * The reader reads only these and the gateway writes only these (both checked by the
 * compiler); a writer leaves an entry naming any other for a newer version (entry-format.ts),
 * so a field added here is never dropped by a writer that does not know it yet. A field no
 * longer read stays here while gateways of a version that writes it may run: a writer that
 * dropped it from the list would leave their records waiting for a version that never comes.
 */
export const USAGE_RECORD_FIELDS = [
  'record',
  'request_id',
  'created_at',
  'org_id',
  'app_id',
  'app_connection_id',
  'api_key_id',
  'oauth_client_id',
  'product_user_id',
  'model',
  'vendor',
  'route',
  'credential_id',
  'stream',
  'status',
  'upstream_status',
  'input_tokens',
  'output_tokens',
  'cache_write_tokens',
  'cache_write_1h_tokens',
  'cache_read_tokens',
  'web_search_requests',
  'currency',
  'sell_cost_nano',
  'vendor_cost_nano',
  'wallet_cost_nano',
  'reserved_nano',
  'latency_ms',
  'end_reason',
  'served_by_mock',
  // Appended by settle.lua.
  'credits_cost_nano',
  'credit_consumption',
  'threshold_crossings',
  'wallet_balance_after',
] as const;

export type UsageRecordField = (typeof USAGE_RECORD_FIELDS)[number];

/**
 * A record as one stream entry field, `record` → JSON of string values: one argument for the
 * settle call instead of forty (Redis and its client pay per argument). settle.lua appends
 * `credits_cost_nano` and `credit_consumption` beside it.
 */
export function usageRecordToFields(record: UsageRecord): string[] {
  const fields: Partial<Record<UsageRecordField, string>> = {
    request_id: record.requestId,
    created_at: record.createdAt.toISOString(),
    org_id: record.orgId,
    app_id: record.appId,
    app_connection_id: record.appConnectionId,
    api_key_id: record.apiKeyId,
    oauth_client_id: record.oauthClientId ?? '',
    product_user_id: record.productUserId ?? '',
    model: record.model,
    vendor: record.vendor,
    route: record.route,
    credential_id: record.credentialId ?? '',
    stream: record.stream ? '1' : '0',
    status: record.status,
    upstream_status: record.upstreamStatus === null ? '' : String(record.upstreamStatus),
    input_tokens: String(record.inputTokens),
    output_tokens: String(record.outputTokens),
    cache_write_tokens: String(record.cacheWriteTokens ?? 0),
    cache_write_1h_tokens: String(record.cacheWrite1hTokens ?? 0),
    cache_read_tokens: String(record.cacheReadTokens ?? 0),
    web_search_requests: String(record.webSearchRequests ?? 0),
    currency: record.currency,
    sell_cost_nano: record.sellCostNano.toString(),
    vendor_cost_nano: record.vendorCostNano.toString(),
    wallet_cost_nano: record.walletCostNano.toString(),
    reserved_nano: record.reservedNano.toString(),
    latency_ms: String(record.latencyMs),
    end_reason: record.endReason ?? '',
    served_by_mock: record.servedByMock === true ? '1' : '0',
  };
  return ['record', JSON.stringify(fields)];
}

const CROSSING = /^(user|org|conn):(0\.8|1\.0):(-?\d+):(\d+):(\d*)$/;

/** "user:0.8:800:1000:1767225600000,org:1.0:…" (as settle.lua writes it) → crossings. */
function parseCrossings(text: string): ThresholdCrossing[] {
  if (text === '') return [];
  return text.split(',').map((part) => {
    const match = CROSSING.exec(part);
    if (!match)
      throw new UsageRecordFormatError('usage entry has an unreadable threshold crossing');
    return {
      scope: match[1] as ThresholdCrossing['scope'],
      threshold: match[2] as ThresholdCrossing['threshold'],
      spentAfterNano: BigInt(match[3]!),
      capNano: BigInt(match[4]!),
      periodKey: match[5]!,
    };
  });
}

export class UsageRecordFormatError extends Error {
  override readonly name = 'UsageRecordFormatError';
}

/** Rebuilds a record from stream entry fields. Throws on an entry that is not a record. */
export function usageRecordFromFields(fields: readonly string[]): UsageRecord {
  const entry = new StreamEntryFields<UsageRecordField>(
    fields,
    (message) => new UsageRecordFormatError(message),
    'usage',
  );
  const packed = entry.get('record');
  if (packed !== undefined) {
    let values: unknown;
    try {
      values = JSON.parse(packed);
    } catch {
      throw new UsageRecordFormatError('usage entry has an unreadable record field');
    }
    for (const [name, value] of Object.entries(values as Record<string, unknown>)) {
      if (typeof value === 'string') entry.set(name, value);
    }
  }
  const createdAt = new Date(entry.text('created_at'));
  if (Number.isNaN(createdAt.getTime()))
    throw new UsageRecordFormatError('usage entry created_at is not a time');
  const route = entry.text('route');
  const status = entry.text('status');
  const upstreamStatus = entry.optional('upstream_status');
  const walletAfter = entry.get('wallet_balance_after');
  if (walletAfter !== undefined && !/^-?\d{1,20}$/.test(walletAfter))
    throw new UsageRecordFormatError('usage entry wallet_balance_after is not an integer');
  return {
    requestId: entry.text('request_id'),
    createdAt,
    orgId: entry.text('org_id'),
    appId: entry.text('app_id'),
    appConnectionId: entry.text('app_connection_id'),
    apiKeyId: entry.text('api_key_id'),
    // Absent from records of versions before OAuth connections.
    oauthClientId: entry.get('oauth_client_id') || null,
    productUserId: entry.optional('product_user_id'),
    model: entry.text('model'),
    vendor: entry.text('vendor'),
    route: route === 'byok' ? 'byok' : 'system',
    credentialId: entry.optional('credential_id'),
    stream: entry.text('stream') === '1',
    status: status as UsageStatus,
    upstreamStatus: upstreamStatus === null ? null : Number(upstreamStatus),
    inputTokens: entry.integer('input_tokens'),
    outputTokens: entry.integer('output_tokens'),
    // Absent from records of versions before decision 324.
    cacheWriteTokens: entry.integerOr('cache_write_tokens', 0),
    cacheWrite1hTokens: entry.integerOr('cache_write_1h_tokens', 0),
    cacheReadTokens: entry.integerOr('cache_read_tokens', 0),
    webSearchRequests: entry.integerOr('web_search_requests', 0),
    currency: entry.text('currency'),
    sellCostNano: BigInt(entry.text('sell_cost_nano')),
    vendorCostNano: BigInt(entry.text('vendor_cost_nano')),
    walletCostNano: BigInt(entry.text('wallet_cost_nano')),
    reservedNano: BigInt(entry.text('reserved_nano')),
    latencyMs: entry.integer('latency_ms'),
    endReason: entry.get('end_reason') || null,
    servedByMock: entry.get('served_by_mock') === '1',
    creditsCostNano: BigInt(entry.get('credits_cost_nano') ?? '0'),
    creditConsumption: parseConsumption(entry.get('credit_consumption') ?? ''),
    thresholdCrossings: parseCrossings(entry.get('threshold_crossings') ?? ''),
    walletBalanceAfterNano: walletAfter === undefined ? null : BigInt(walletAfter),
  };
}
