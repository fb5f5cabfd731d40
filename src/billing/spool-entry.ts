// One spooled settle as a line of the settle spool: the usage record (as its stream fields, so
// every field of the record travels) and the accounts the settle touches, in JSON. Amounts
// are decimal strings of nano-units, dates ISO strings. A line a newer version wrote (a format
// or a record field this version does not know) is left in the spool, as it is, for a newer
// version to replay: settled here, its record would reach the ledger without what this version
// does not read (decision 333).
import type { RequestAccounts } from './budget-store.js';
import type { Period } from '../periods.js';
import { unknownEntryNames } from '../ledger/entry-format.js';
import {
  usageRecordFromFields,
  usageRecordToFields,
  type UsageRecord,
} from '../ledger/usage-record.js';

export interface SpooledSettle {
  readonly record: UsageRecord;
  readonly accounts: RequestAccounts;
}

const FORMAT_VERSION = 1;

interface PeriodJson {
  start: string;
  end: string;
  key: string;
}

const periodToJson = (period: Period): PeriodJson => ({
  start: period.start.toISOString(),
  end: period.end.toISOString(),
  key: period.key,
});
const periodFromJson = (json: PeriodJson): Period => ({
  start: new Date(json.start),
  end: new Date(json.end),
  key: json.key,
});
const capToJson = (cap: RequestAccounts['orgCap']) =>
  cap && { capNano: cap.capNano.toString(), period: periodToJson(cap.period) };
const capFromJson = (json: ReturnType<typeof capToJson>): RequestAccounts['orgCap'] =>
  json && { capNano: BigInt(json.capNano), period: periodFromJson(json.period) };

/** The entry as one line (no newline inside: JSON escapes them). */
export function spoolLine(entry: SpooledSettle): string {
  const { accounts } = entry;
  return JSON.stringify({
    v: FORMAT_VERSION,
    fields: usageRecordToFields(entry.record),
    accounts: {
      orgId: accounts.orgId,
      appConnectionId: accounts.appConnectionId,
      orgCap: capToJson(accounts.orgCap),
      connectionCap: capToJson(accounts.connectionCap),
      user: accounts.user && {
        productUserId: accounts.user.productUserId,
        capNano: accounts.user.capNano?.toString() ?? null,
        creditMode: accounts.user.creditMode,
        period: periodToJson(accounts.user.period),
      },
      walletPays: accounts.walletPays,
      credentials: accounts.credentials,
    },
  });
}

/** A spool line as read: an entry this version replays, or one it leaves for a newer version. */
export type SpoolLine =
  | { readonly kind: 'entry'; readonly entry: SpooledSettle; readonly line: string }
  | { readonly kind: 'newer'; readonly line: string; readonly unknown: readonly string[] };

/**
 * Reads a spool line: a newer format version, or a record naming a field this version does not
 * know, is `newer` (kept as written); throws on a line that is not an entry (torn by a crash).
 */
export function readSpoolLine(line: string): SpoolLine {
  const json = JSON.parse(line) as { v?: unknown; fields?: unknown };
  if (typeof json.v === 'number' && json.v > FORMAT_VERSION) {
    return { kind: 'newer', line, unknown: [`format ${json.v}`] };
  }
  if (json.v === FORMAT_VERSION && Array.isArray(json.fields)) {
    const unknown = unknownEntryNames(json.fields as string[]);
    if (unknown.length > 0) return { kind: 'newer', line, unknown };
  }
  return { kind: 'entry', entry: parseSpoolLine(line), line };
}

/** Parses a line written by spoolLine; throws on anything else (a torn or foreign line). */
export function parseSpoolLine(line: string): SpooledSettle {
  const json = JSON.parse(line) as {
    v: number;
    fields: string[];
    accounts: {
      orgId: string;
      appConnectionId: string;
      orgCap: ReturnType<typeof capToJson>;
      connectionCap: ReturnType<typeof capToJson>;
      user: {
        productUserId: string;
        capNano: string | null;
        creditMode: NonNullable<RequestAccounts['user']>['creditMode'];
        period: PeriodJson;
      } | null;
      walletPays: boolean;
      credentials: RequestAccounts['credentials'];
    };
  };
  if (json.v !== FORMAT_VERSION || !Array.isArray(json.fields) || !json.accounts) {
    throw new Error('not a settle spool entry');
  }
  const { accounts } = json;
  return {
    record: usageRecordFromFields(json.fields),
    accounts: {
      orgId: accounts.orgId,
      appConnectionId: accounts.appConnectionId,
      orgCap: capFromJson(accounts.orgCap),
      connectionCap: capFromJson(accounts.connectionCap),
      user: accounts.user && {
        productUserId: accounts.user.productUserId,
        capNano: accounts.user.capNano === null ? null : BigInt(accounts.user.capNano),
        creditMode: accounts.user.creditMode,
        period: periodFromJson(accounts.user.period),
      },
      walletPays: accounts.walletPays,
      credentials: accounts.credentials,
    },
  };
}
