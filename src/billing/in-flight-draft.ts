// The draft of a held request: reserve.lua keeps it in the org's in-flight hash, beside the
// holds, until settle.lua removes it. It is what another instance needs to record the request
// if this one dies first (src/billing/lost-requests.ts): the record the charging policy wrote
// for that case, and the accounts its settle touches. Written on every reserve, so it is
// compact: one JSON array of short values (~450 bytes), not the settle call it becomes.
import type { UsageRecord } from '../ledger/usage-record.js';
import type { CreditMode } from './modes.js';
import type { SettleAccounts } from './budget-store.js';

export interface InFlightDraft {
  /** The gateway instance serving the request (its heartbeat says whether it lives). */
  readonly instance: string;
  /** When its holds lapse: a lost request is recorded only after, never while it may live. */
  readonly lapsesAtMs: number;
  /**
   * The request's record if it is lost (credential and latency filled in when it is), dated
   * at the request's admission like every record (decision 402).
   */
  readonly record: UsageRecord;
  readonly accounts: SettleAccounts;
}

export class DraftFormatError extends Error {
  override readonly name = 'DraftFormatError';
}

const DRAFT_VERSION = 1;

/** The record's fields in the order the draft holds them, and how each is written. */
const RECORD_FIELDS = [
  ['requestId', 'text'],
  ['orgId', 'text'],
  ['appId', 'text'],
  ['appConnectionId', 'text'],
  ['apiKeyId', 'text'],
  ['oauthClientId', 'optional'],
  ['productUserId', 'optional'],
  ['model', 'text'],
  ['vendor', 'text'],
  ['stream', 'flag'],
  ['status', 'text'],
  ['inputTokens', 'count'],
  ['outputTokens', 'count'],
  ['currency', 'text'],
  ['sellCostNano', 'nano'],
  ['vendorCostNano', 'nano'],
  ['walletCostNano', 'nano'],
  ['reservedNano', 'nano'],
  ['endReason', 'optional'],
  ['servedByMock', 'flag'],
] as const satisfies ReadonlyArray<readonly [keyof UsageRecord, string]>;

type Packed = string | number | null | Packed[];

export function encodeDraft(draft: InFlightDraft): string {
  const { record, accounts } = draft;
  // The third value is the record's date, its admission instant. A draft written before
  // decision 402 holds its reserve call's instant there, a few milliseconds later: read alike.
  const packed: Packed[] = [
    DRAFT_VERSION,
    draft.instance,
    record.createdAt.getTime(),
    draft.lapsesAtMs,
  ];
  for (const [name, kind] of RECORD_FIELDS) {
    const value = record[name];
    packed.push(
      kind === 'nano'
        ? (value as bigint).toString()
        : kind === 'flag'
          ? value === true
            ? 1
            : 0
          : ((value as string | number | null | undefined) ?? null),
    );
  }
  const cap = (account: SettleAccounts['orgCap']): Packed =>
    account ? [account.capNano.toString(), account.period.key] : null;
  const user = accounts.user;
  packed.push(
    accounts.appConnectionId,
    cap(accounts.orgCap),
    cap(accounts.connectionCap),
    user
      ? [user.productUserId, user.capNano?.toString() ?? null, user.creditMode, user.period.key]
      : null,
  );
  return JSON.stringify(packed);
}

export function decodeDraft(text: string): InFlightDraft {
  let packed: unknown;
  try {
    packed = JSON.parse(text);
  } catch {
    throw new DraftFormatError('an in-flight draft is not JSON');
  }
  if (!Array.isArray(packed) || packed[0] !== DRAFT_VERSION) {
    throw new DraftFormatError('an in-flight draft of an unknown version');
  }
  const values = packed as unknown[];
  let at = 1;
  const next = (): unknown => values[at++];
  const text_ = (): string => {
    const value = next();
    if (typeof value !== 'string') throw new DraftFormatError('an in-flight draft is malformed');
    return value;
  };
  const number = (): number => {
    const value = next();
    if (typeof value !== 'number') throw new DraftFormatError('an in-flight draft is malformed');
    return value;
  };
  const instance = text_();
  const admittedAtMs = number();
  const lapsesAtMs = number();
  const record: Record<string, unknown> = {};
  for (const [name, kind] of RECORD_FIELDS) {
    if (kind === 'text') record[name] = text_();
    else if (kind === 'optional') record[name] = (next() as string | null) ?? null;
    else if (kind === 'count') record[name] = number();
    else if (kind === 'flag') record[name] = number() === 1;
    else record[name] = BigInt(text_());
  }
  const appConnectionId = text_();
  const cap = (): SettleAccounts['orgCap'] => {
    const value = next() as [string, string] | null;
    return value ? { capNano: BigInt(value[0]), period: { key: value[1] } } : null;
  };
  const orgCap = cap();
  const connectionCap = cap();
  const user = next() as [string, string | null, CreditMode, string] | null;
  return {
    instance,
    lapsesAtMs,
    // The parts a lost record gets when it is settled, or never has (no vendor answer).
    record: Object.assign(record, {
      createdAt: new Date(admittedAtMs),
      route: 'system',
      credentialId: null,
      upstreamStatus: null,
      latencyMs: 0,
    }) as unknown as UsageRecord,
    accounts: {
      orgId: record.orgId as string,
      appConnectionId,
      orgCap,
      connectionCap,
      user: user
        ? {
            productUserId: user[0],
            capNano: user[1] === null ? null : BigInt(user[1]),
            creditMode: user[2],
            period: { key: user[3] },
          }
        : null,
    },
  };
}
