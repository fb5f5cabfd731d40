// Usage records an org has settled in Redis that Postgres does not have yet: its usage stream,
// and its dead letters not replayed yet (settled and charged, but refused by usage_records),
// less the records whose rows the writer already committed (it deletes them right after, so
// a few can be in both for a moment). An account rebuilt from the ledger adds these, or it
// would forget what was spent while the writer (or Postgres) lagged behind.
import { randomBytes } from 'node:crypto';
import type { RedisClient } from '../redis/connect.js';
import type { DbClient, DbPool } from '../db/pool.js';
import type { RedisKeys } from '../redis/keys.js';
import { usageRecordFromFields, type UsageRecord } from './usage-record.js';

const PAGE = 1000;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/**
 * At most this many entries are read per org. Normally the stream holds a few hundred at
 * most; far more means Postgres has been down for a while, and a rebuild then counts only
 * the oldest this many (as it counted none before UnwrittenUsage existed).
 */
export const MAX_UNWRITTEN_ENTRIES = 20_000;

type StreamEntry = [id: string, fields: string[]];

/**
 * The `rebuilds` field naming the current listing of `account` (a random token, set with the
 * listing and removed with it). No account key ends with `:listing`, so settle never notes an
 * amount there.
 */
export const listingField = (account: string): string => `${account}:listing`;

/** How long the `rebuilds` hash outlives the last rebuild that began. */
const REBUILDS_TTL_MS = 3_600_000;

/**
 * An org's usage stream as read at one instant (one MULTI): its entries (at most
 * MAX_UNWRITTEN_ENTRIES, the oldest), and where the stream stood.
 */
export interface StreamCut {
  /** The stream's entries, then the org's dead letters not replayed (read with the cut). */
  readonly entries: readonly string[][];
  /** The stream's last generated id: every record settled before the read is at or before it
   * ('0-0' when there was no stream). */
  readonly lastId: string;
  /** How many entries the stream has ever had (XINFO entries-added; 0 with no stream). */
  readonly added: number;
  /** How many the writer has removed (entries-added − length; -1 with no stream). */
  readonly deletions: number;
  /**
   * The org's `rebuilds` hash at the read: account key -> what settles had not charged it
   * (integer strings). An account's growth since is what settled after the cut.
   */
  readonly missed: ReadonlyMap<string, string>;
}

export class UnwrittenUsage {
  /** One stream read per org at a time: the forOrg calls that need it together share it. */
  private readonly reading = new Map<string, Promise<StreamEntry[]>>();

  constructor(
    private readonly redis: RedisClient,
    private readonly db: DbPool,
    private readonly keys: RedisKeys,
  ) {}

  /**
   * Lists `account` in the org's `rebuilds` hash (if it is not listed already): from now on,
   * every settle that meets the account missing adds there what it would have charged
   * (settle.lua), until account-rebuild.lua installs the account. The hash goes an hour after
   * the last rebuild began, so a rebuild that died leaves nothing behind for long.
   * Returns the listing's token (a listing made anew gets a new one), or null when the account
   * is in Redis (read in the same atomic step: nothing to rebuild). An install takes the
   * listing off, so a rebuild that finds its token at its cut and at its install knows the
   * account was missing all along, every settle meanwhile noted in the field (review of 304).
   * With `credits` (a user's credits hash), `creditsLoaded` says whether they are loaded, read
   * in the same step.
   */
  async listRebuild(
    orgId: string,
    account: string,
    credits?: string,
  ): Promise<{ listing: string | null; creditsLoaded: boolean }> {
    const rebuilds = this.keys.rebuilds(orgId);
    const token = listingField(account);
    const multi = this.redis
      .multi()
      .exists(account)
      .hsetnx(rebuilds, account, '0')
      .hsetnx(rebuilds, token, randomBytes(8).toString('hex'))
      .hget(rebuilds, token)
      .pexpire(rebuilds, REBUILDS_TTL_MS);
    if (credits !== undefined) multi.hexists(credits, 'loaded');
    const replies = (await multi.exec()) ?? [];
    for (const [error] of replies) if (error) throw error;
    if (replies.length !== (credits === undefined ? 5 : 6)) {
      throw new Error('listRebuild: the MULTI was not answered');
    }
    return {
      listing: Number(replies[0]![1]) === 1 ? null : String(replies[3]![1]),
      creditsLoaded: Number(replies[5]?.[1] ?? 0) === 1,
    };
  }

  /**
   * The org's records not in the ledger yet. Not exact beside a ledger read of its own: a
   * record the writer commits after this looks at the ledger is in both. Account rebuilds and
   * credit loads read the ledger and the stream as one (cut, unwrittenAt:
   * src/billing/account-rebuild.ts); a balance set on a wallet that is not loaded, and a cap's
   * marks read when the cap is set, use this.
   */
  async forOrg(orgId: string): Promise<UsageRecord[]> {
    const entries = [
      ...(await this.entries(orgId)).map(([, fields]) => fields),
      ...(await deadLettersOf(this.db, orgId)),
    ];
    return unwrittenIn(this.db, entries);
  }

  /** How many entries the org's stream has lost so far (-1: there is no stream). */
  async deletions(orgId: string): Promise<number> {
    try {
      return streamPosition(await this.redis.xinfo('STREAM', this.keys.usageStream(orgId)))
        .deletions;
    } catch (error) {
      if (isNoSuchStream(error)) return -1;
      throw error;
    }
  }

  /**
   * The org's stream and its `rebuilds` hash read in one MULTI, and meanwhile its dead letters
   * through the ledger snapshot `snapshot` (account-rebuild.ts measures one org at a time and
   * shares each cut among the rebuilds waiting for it).
   */
  async cut(orgId: string, snapshot: DbClient): Promise<StreamCut> {
    const [cut, deadLetters] = await Promise.all([
      readCut(this.redis, this.keys.usageStream(orgId), this.keys.rebuilds(orgId)),
      deadLettersOf(snapshot, orgId),
    ]);
    return { ...cut, entries: [...cut.entries, ...deadLetters] };
  }

  /**
   * The records of `cut` (its stream entries and the dead letters read with it) that the
   * ledger snapshot `client` reads does not have, each once.
   */
  unwrittenAt(client: DbClient, cut: StreamCut): Promise<UsageRecord[]> {
    return unwrittenIn(client, cut.entries);
  }

  private entries(orgId: string): Promise<StreamEntry[]> {
    const running = this.reading.get(orgId);
    if (running) return running;
    const reading = readUsageStream(
      this.redis,
      this.keys.usageStream(orgId),
      MAX_UNWRITTEN_ENTRIES,
    ).finally(() => this.reading.delete(orgId));
    this.reading.set(orgId, reading);
    return reading;
  }
}

/**
 * The records of the org's stream `entries` (read after the snapshot `client` reads) and of
 * its dead letters that the snapshot does not have, each once (gw reconcile).
 */
export async function unwrittenAtSnapshot(
  client: DbClient,
  orgId: string,
  entries: readonly string[][],
): Promise<UsageRecord[]> {
  return unwrittenIn(client, [...entries, ...(await deadLettersOf(client, orgId))]);
}

/** The fields of the org's dead-lettered entries not replayed yet. */
async function deadLettersOf(db: Pick<DbPool, 'query'>, orgId: string): Promise<string[][]> {
  const { rows } = await db.query<{ entry: string }>(
    'SELECT entry FROM usage_dead_letters WHERE org_id = $1 AND replayed_at IS NULL',
    [orgId],
  );
  return rows.map((row) => JSON.parse(row.entry) as string[]);
}

/** The records among `entries` that `db` does not have in the ledger, each once. */
async function unwrittenIn(
  db: Pick<DbPool, 'query'>,
  entries: readonly string[][],
): Promise<UsageRecord[]> {
  const records: UsageRecord[] = [];
  const seen = new Set<string>();
  for (const fields of entries) {
    try {
      const record = usageRecordFromFields(fields);
      if (seen.has(record.requestId)) continue;
      seen.add(record.requestId);
      records.push(record);
    } catch {
      // an unreadable entry is the writer's to report; it has no amounts to count
    }
  }
  if (records.length === 0) return records;
  const { rows } = await db.query<{ request_id: string }>(
    'SELECT request_id::text FROM usage_records WHERE request_id = ANY($1::uuid[])',
    // An id that is not a uuid cannot be in the ledger (and would fail the cast).
    [records.map((record) => record.requestId).filter(isUuid)],
  );
  const written = new Set(rows.map((row) => row.request_id));
  return records.filter((record) => !written.has(record.requestId));
}

/**
 * The stream, its last id and counters, and the org's `rebuilds` hash, read in one MULTI
 * (HGETALL, XINFO STREAM, XRANGE).
 */
async function readCut(redis: RedisClient, stream: string, rebuilds: string): Promise<StreamCut> {
  const replies =
    (await redis
      .multi()
      .hgetall(rebuilds)
      .xinfo('STREAM', stream)
      .xrange(stream, '-', '+', 'COUNT', MAX_UNWRITTEN_ENTRIES)
      .exec()) ?? [];
  const [missedError, missedFields] = replies[0] ?? [new Error('no reply'), undefined];
  if (missedError) throw missedError;
  const missed = new Map(Object.entries((missedFields ?? {}) as Record<string, string>));
  const [infoError, info] = replies[1] ?? [new Error('no reply'), undefined];
  if (infoError) {
    if (isNoSuchStream(infoError)) {
      return { entries: [], lastId: '0-0', added: 0, deletions: -1, missed };
    }
    throw infoError;
  }
  const [rangeError, range] = replies[2] ?? [new Error('no reply'), undefined];
  if (rangeError) throw rangeError;
  return {
    entries: ((range ?? []) as StreamEntry[]).map(([, fields]) => fields),
    ...streamPosition(info),
    missed,
  };
}

/** Where XINFO STREAM's reply says the stream stands. */
export function streamPosition(info: unknown): Omit<StreamCut, 'entries' | 'missed'> {
  const list = Array.isArray(info) ? (info as unknown[]) : [];
  const field = (name: string): unknown => list[list.indexOf(name) + 1];
  const added = Number(field('entries-added'));
  return {
    lastId: String(field('last-generated-id')),
    added,
    deletions: added - Number(field('length')),
  };
}

function isNoSuchStream(error: unknown): boolean {
  return error instanceof Error && /no such key/i.test(error.message);
}

/** A usage stream's entries, oldest first, page by page, up to `max` (about). */
export async function readUsageStream(
  redis: RedisClient,
  stream: string,
  max = Infinity,
): Promise<StreamEntry[]> {
  const entries: StreamEntry[] = [];
  let start = '-';
  while (entries.length < max) {
    const page = (await redis.xrange(stream, start, '+', 'COUNT', PAGE)) as StreamEntry[];
    entries.push(...page);
    if (page.length < PAGE) break;
    start = `(${page.at(-1)![0]}`;
  }
  return entries;
}

/** True for a request id usage_records can hold (its column is a uuid). */
export const isUuid = (id: string): boolean => UUID.test(id);

/** Sum of a nano amount over records. */
export function sumNano(
  records: readonly UsageRecord[],
  amount: (record: UsageRecord) => bigint,
): bigint {
  return records.reduce((total, record) => total + amount(record), 0n);
}
