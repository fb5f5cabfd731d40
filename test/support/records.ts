// Usage records in tests: one to drive the money layer directly, and a request's row as it
// lands in the ledger.
import type pg from 'pg';
import { newRequestId } from '../../src/ids.js';
import type { RequestAccounts } from '../../src/billing/budget-store.js';
import type { UsageRecord } from '../../src/ledger/usage-record.js';
import { eventually } from './services.js';

/** A completed system-route request costing `sellCostNano`, with any field overridden. */
export function usageRecord(
  orgId: string,
  sellCostNano: bigint,
  overrides: Partial<UsageRecord> = {},
): UsageRecord {
  return {
    requestId: newRequestId(),
    createdAt: new Date(),
    orgId,
    appId: 'app_test',
    appConnectionId: 'conn_test',
    apiKeyId: 'key_test',
    productUserId: null,
    model: 'vendor_b/gpt-4o-mini',
    vendor: 'vendor_b',
    route: 'system',
    credentialId: null,
    stream: false,
    status: 'completed',
    upstreamStatus: 200,
    inputTokens: 10,
    outputTokens: 5,
    currency: 'USD',
    sellCostNano,
    vendorCostNano: sellCostNano,
    walletCostNano: 0n,
    reservedNano: sellCostNano,
    latencyMs: 1,
    ...overrides,
  };
}

/** A request's record as a draft keeps it: lost with its instance (nothing charged). */
export function lostRecord(orgId: string, overrides: Partial<UsageRecord> = {}): UsageRecord {
  return usageRecord(orgId, 0n, {
    oauthClientId: null,
    status: 'incomplete',
    upstreamStatus: null,
    inputTokens: 0,
    outputTokens: 0,
    reservedNano: 5000n,
    latencyMs: 0,
    endReason: 'gateway_lost',
    servedByMock: false,
    ...overrides,
  });
}

/** `columns` of a request's ledger row, polled until the usage writer has written it. */
export function ledgerRow<T extends object>(
  db: pg.Pool,
  requestId: string | null,
  columns: string,
  timeoutMs = 10_000,
): Promise<T> {
  return eventually(async () => {
    const { rows } = await db.query<T>(
      `SELECT ${columns} FROM usage_records WHERE request_id = $1`,
      [requestId],
    );
    return rows[0];
  }, timeoutMs);
}

/** The accounts of a settle the org's wallet alone pays: no cap, no product user, no credential. */
export function walletAccounts(
  record: Pick<UsageRecord, 'orgId' | 'appConnectionId'>,
): RequestAccounts {
  return {
    orgId: record.orgId,
    appConnectionId: record.appConnectionId,
    orgCap: null,
    connectionCap: null,
    user: null,
    walletPays: true,
    credentials: null,
  };
}

/** A credential notice's stream entry fields, as lua/failover.lua writes them. */
export const FAILOVER_NOTICE_FIELDS: readonly string[] = [
  'event',
  'provider_credential.failed_over',
  'org_id',
  'org_1',
  'credential_id',
  'cred_1',
  'request_id',
  'req_1',
  'upstream_status',
  '429',
  'cooldown_until_ms',
  '1000',
  'at_ms',
  '900',
];
