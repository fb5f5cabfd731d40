// Writes usage records into the partitioned usage_records table, many rows per statement.
// Replays are harmless: ON CONFLICT (request_id, created_at) DO NOTHING. The same statement
// upserts the rollups and the wallets' running totals of the rows it actually inserted
// (usage-rollups.ts). The webhook events the batch describes (thresholds crossed, a wallet
// running low, a credential failing) are written in the same transaction by the events port,
// when one is given.
import { withTransaction, type DbClient, type DbPool } from '../db/pool.js';
import { isDependencyUnavailable } from '../errors.js';
import type { Logger } from '../log.js';
import { nanoToNumeric } from '../money.js';
import type { UsageNotice } from './usage-notices.js';
import type { UsageRecord } from './usage-record.js';
import { withRollups } from './usage-rollups.js';

/** Writes the events a batch describes, in the batch's transaction (src/usage-events/). */
export interface UsageEventWriter {
  /** Whether the batch may hold an event (in memory: most batches hold none, and cost nothing). */
  mayHaveEvents(records: readonly UsageRecord[], notices: readonly UsageNotice[]): boolean;
  write(
    client: DbClient,
    records: readonly UsageRecord[],
    notices: readonly UsageNotice[],
  ): Promise<void>;
}

export class PostgresUsageSink {
  private readonly knownPartitions = new Set<string>();

  constructor(
    private readonly db: DbPool,
    private readonly events?: { readonly writer: UsageEventWriter; readonly logger: Logger },
  ) {}

  async write(
    records: readonly UsageRecord[],
    notices: readonly UsageNotice[] = [],
  ): Promise<void> {
    if (records.length === 0 && notices.length === 0) return;
    await this.ensurePartitions(records);
    await withTransaction(
      this.db,
      async (client) => {
        if (records.length > 0) {
          await this.insertRecords(client, records);
          await this.insertConsumptions(client, records);
        }
        await this.writeEvents(client, records, notices);
      },
      { replayable: true },
    );
  }

  /**
   * The batch's events, behind a savepoint: should they fail for what they hold (a bug), the
   * money is still written — the events of this batch are lost and logged, the ledger never
   * stalls. A failure that says nothing of what they hold (a statement past its bound, a lost
   * connection, a deadlock) fails the whole transaction, which is retried with its events.
   */
  private async writeEvents(
    client: DbClient,
    records: readonly UsageRecord[],
    notices: readonly UsageNotice[],
  ): Promise<void> {
    if (!this.events?.writer.mayHaveEvents(records, notices)) return;
    await client.query('SAVEPOINT usage_events');
    try {
      await this.events.writer.write(client, records, notices);
      await client.query('RELEASE SAVEPOINT usage_events');
    } catch (error) {
      if (isTransient(error)) throw error;
      await client.query('ROLLBACK TO SAVEPOINT usage_events');
      this.events.logger.error(
        { err: error, records: records.length, notices: notices.length },
        'usage writer: webhook events of a batch could not be written; the batch is written without them',
      );
    }
  }

  private async insertRecords(client: DbClient, records: readonly UsageRecord[]): Promise<void> {
    const column = <T>(pick: (record: UsageRecord) => T): T[] => records.map(pick);
    await client.query(
      withRollups(`INSERT INTO usage_records (request_id, created_at, org_id, app_id, app_connection_id,
         api_key_id, product_user_id, model, vendor, route, credential_id, stream, status,
         upstream_status, input_tokens, output_tokens, total_tokens, currency, sell_cost,
         vendor_cost, wallet_cost, reserved_amount, latency_ms, credits_cost, end_reason,
         served_by_mock, oauth_client_id, cache_write_tokens, cache_write_1h_tokens,
         cache_read_tokens, web_search_requests)
       SELECT * FROM unnest($1::uuid[], $2::timestamptz[], $3::text[], $4::text[], $5::text[],
         $6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::text[], $12::boolean[],
         $13::text[], $14::integer[], $15::integer[], $16::integer[], $17::integer[], $18::text[],
         $19::numeric[], $20::numeric[], $21::numeric[], $22::numeric[], $23::integer[],
         $24::numeric[], $25::text[], $26::boolean[], $27::text[], $28::integer[],
         $29::integer[], $30::integer[],
         $31::integer[])
       ON CONFLICT (request_id, created_at) DO NOTHING`),
      [
        column((r) => r.requestId),
        column((r) => r.createdAt.toISOString()),
        column((r) => r.orgId),
        column((r) => r.appId),
        column((r) => r.appConnectionId),
        column((r) => r.apiKeyId),
        column((r) => r.productUserId),
        column((r) => r.model),
        column((r) => r.vendor),
        column((r) => r.route),
        column((r) => r.credentialId),
        column((r) => r.stream),
        column((r) => r.status),
        column((r) => r.upstreamStatus),
        column((r) => r.inputTokens),
        column((r) => r.outputTokens),
        column((r) => r.inputTokens + r.outputTokens),
        column((r) => r.currency),
        column((r) => nanoToNumeric(r.sellCostNano)),
        column((r) => nanoToNumeric(r.vendorCostNano)),
        column((r) => nanoToNumeric(r.walletCostNano)),
        column((r) => nanoToNumeric(r.reservedNano)),
        column((r) => r.latencyMs),
        column((r) => nanoToNumeric(r.creditsCostNano ?? 0n)),
        column((r) => r.endReason ?? null),
        column((r) => r.servedByMock === true),
        column((r) => r.oauthClientId ?? null),
        column((r) => r.cacheWriteTokens ?? 0),
        column((r) => r.cacheWrite1hTokens ?? 0),
        column((r) => r.cacheReadTokens ?? 0),
        column((r) => r.webSearchRequests ?? 0),
      ],
    );
  }

  private async insertConsumptions(
    client: DbClient,
    records: readonly UsageRecord[],
  ): Promise<void> {
    const rows = records.flatMap((record) =>
      (record.creditConsumption ?? []).map((entry) => ({ record, entry })),
    );
    if (rows.length === 0) return;
    await client.query(
      `INSERT INTO credit_consumptions (request_id, grant_id, amount, created_at)
       SELECT * FROM unnest($1::uuid[], $2::text[], $3::numeric[], $4::timestamptz[])
       ON CONFLICT (request_id, grant_id) DO NOTHING`,
      [
        rows.map(({ record }) => record.requestId),
        rows.map(({ entry }) => entry.grantId),
        rows.map(({ entry }) => nanoToNumeric(entry.amountNano)),
        rows.map(({ record }) => record.createdAt.toISOString()),
      ],
    );
  }

  private async ensurePartitions(records: readonly UsageRecord[]): Promise<void> {
    for (const record of records) {
      const month = record.createdAt.toISOString().slice(0, 7);
      if (this.knownPartitions.has(month)) continue;
      await this.db.query('SELECT gw_ensure_usage_partition($1::date)', [`${month}-01`]);
      this.knownPartitions.add(month);
    }
  }
}

/**
 * A failure that a retry of the same statements can get past: a wait given up on (the
 * writer's bound, USAGE_WRITE_TIMEOUT_MS), a connection lost, a deadlock or serialization
 * failure. Not a reason to drop a batch's events.
 */
function isTransient(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return isDependencyUnavailable(error) || code === '40P01' || code === '40001';
}
