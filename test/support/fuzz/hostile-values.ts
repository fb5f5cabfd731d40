// The hostile values the fuzz suite injects, each with a name (what the failure report shows:
// never the value itself, which may be huge or unprintable). Values that JSON.stringify cannot
// produce (1e999, 2^53+1, -0, nesting 10,000 deep, duplicate keys) are raw JSON text.
import type { Random } from './random.js';

export class RawJson {
  constructor(readonly text: string) {}
}

export interface Hostile {
  readonly name: string;
  readonly value: unknown;
  /** Relative frequency; expensive values (slow to count, big) are rarer. */
  readonly weight?: number;
}

const nested = (depth: number, open: string, close: string, leaf: string): RawJson =>
  new RawJson(open.repeat(depth) + leaf + close.repeat(depth));

export const hostileStrings: readonly Hostile[] = [
  { name: 'empty-string', value: '' },
  { name: 'blank-string', value: '   ' },
  { name: 'nul-only', value: '\u0000' },
  { name: 'nul-inside', value: 'fuzz\u0000user' },
  { name: 'lone-high-surrogate', value: '\ud800' },
  { name: 'lone-low-surrogate-inside', value: 'a\udc00b' },
  { name: 'bom-and-nonchar', value: '\ufeff\uffff' },
  { name: 'control-chars', value: '\u0001\u0007\u001b[31m\r\n' },
  { name: 'rtl-override', value: 'abc\u202edef' },
  { name: 'emoji', value: '\u{1f600}\u{1f4a9}' },
  { name: 'sql-ish', value: "'; DROP TABLE usage_records; --" },
  { name: 'path-ish', value: '../../etc/passwd' },
  { name: 'percent-nul', value: '%00' },
  { name: 'proto-key', value: '__proto__' },
  { name: 'numeric-string-1e18', value: '1e18' },
  { name: 'numeric-string-negative', value: '-5' },
  { name: 'string-300', value: 'a'.repeat(300) },
  { name: 'string-10k', value: 'x'.repeat(10_000) },
  { name: 'words-100k', value: 'lorem ipsum '.repeat(8_500), weight: 0.5 },
  // Slow for a tokenizer that is quadratic on unbroken runs (issue 10): rare and modest.
  { name: 'unbroken-run-20k', value: 'a'.repeat(20_000), weight: 0.3 },
  { name: 'cjk-8000', value: '\u6f22'.repeat(8_000), weight: 0.3 },
];

export const hostileNumbers: readonly Hostile[] = [
  { name: 'zero', value: 0 },
  { name: 'minus-one', value: -1 },
  { name: 'fraction', value: 1.5 },
  { name: '1e18', value: 1e18 },
  { name: 'minus-1e18', value: -1e18 },
  { name: '2^31', value: 2 ** 31 },
  { name: '2^53+1-literal', value: new RawJson('9007199254740993') },
  { name: '2^63', value: new RawJson('9223372036854775808') },
  { name: '1e308', value: 1e308 },
  { name: '1e999-literal', value: new RawJson('1e999') },
  { name: 'minus-zero-literal', value: new RawJson('-0') },
  { name: 'tiny', value: 1e-9 },
  { name: '30-digit-literal', value: new RawJson('123456789012345678901234567890') },
];

export const hostileOthers: readonly Hostile[] = [
  { name: 'null', value: null },
  { name: 'true', value: true },
  { name: 'false', value: false },
  { name: 'empty-array', value: [] },
  { name: 'empty-object', value: {} },
  { name: 'string-array', value: ['x'] },
  { name: 'object', value: { a: 1 } },
  { name: 'nested-array-10000', value: nested(10_000, '[', ']', '0') },
  { name: 'nested-object-10000', value: nested(10_000, '{"a":', '}', '1') },
  { name: 'nested-array-100000', value: nested(100_000, '[', ']', '0'), weight: 0.3 },
  { name: 'nested-array-300', value: nested(300, '[', ']', '0') },
  { name: 'wide-array-20000', value: new RawJson(`[${Array(20_000).fill('0').join(',')}]`) },
  { name: 'proto-pollution', value: new RawJson('{"__proto__":{"polluted":true},"a":1}') },
  { name: 'duplicate-keys', value: new RawJson('{"a":1,"a":"two"}') },
];

/** Numbers that matter for the fields that size a hold or multiply output. */
export const hostileCounts: readonly Hostile[] = [
  { name: 'n-2', value: 2 },
  { name: 'n-8', value: 8 },
  { name: 'n-128', value: 128 },
  { name: 'n-1e9', value: 1e9 },
  { name: 'max-tokens-1e9', value: 1_000_000_000 },
  { name: 'max-tokens-2^53', value: 2 ** 53 },
  { name: 'max-tokens-1e18', value: 1e18 },
  ...hostileNumbers,
];

/** Decimal-amount strings for money fields (credit grants). */
export const hostileAmounts: readonly Hostile[] = [
  { name: 'amount-1e18-dollars', value: '1000000000000000000' },
  { name: 'amount-exp-notation', value: '1e18' },
  { name: 'amount-2^53-nano-plus', value: '9007199.254740993' },
  { name: 'amount-int64-nano-plus', value: '9223372036.854775808' },
  { name: 'amount-10-million', value: '10000000' },
  { name: 'amount-sub-nano', value: '0.0000000001' },
  { name: 'amount-negative', value: '-1' },
  { name: 'amount-zero', value: '0' },
  { name: 'amount-leading-zeros', value: '00.5' },
  { name: 'amount-two-dots', value: '1.5.5' },
  { name: 'amount-fullwidth-digit', value: '\uff11' },
  { name: 'amount-padded', value: ' 1 ' },
  { name: 'amount-nul', value: '1\u0000' },
  { name: 'amount-as-number', value: 1 },
  { name: 'amount-as-1e18-number', value: 1e18 },
];

/** Currency codes and timestamps. */
export const hostileCodes: readonly Hostile[] = [
  { name: 'currency-eur', value: 'EUR' },
  { name: 'currency-lowercase', value: 'usd' },
  { name: 'currency-nul', value: 'US\u0000' },
  { name: 'timestamp-far-future', value: '9999-12-31T23:59:59Z' },
  { name: 'timestamp-past', value: '2000-01-01T00:00:00Z' },
  { name: 'timestamp-year-0', value: '0000-01-01T00:00:00Z' },
  { name: 'timestamp-no-offset', value: '2030-01-01T00:00:00' },
  { name: 'timestamp-invalid-day', value: '2030-02-31T00:00:00Z' },
];

export const allHostileValues: readonly Hostile[] = [
  ...hostileStrings,
  ...hostileNumbers,
  ...hostileOthers,
];

export function pickHostile(random: Random, pool: readonly Hostile[]): Hostile {
  return random.weighted(pool.map((entry) => [entry.weight ?? 1, entry] as const));
}

/** JSON text of a value that may contain RawJson parts. */
export function toJson(value: unknown): string {
  if (value instanceof RawJson) return value.text;
  if (Array.isArray(value)) return `[${value.map(toJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>);
    return `{${entries.map(([key, item]) => `${JSON.stringify(key)}:${toJson(item)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** Sets `value` at a dotted path ('messages.0.content'), creating containers on the way. */
export function setPath(target: Record<string, unknown>, path: string, value: unknown): void {
  const steps = path.split('.');
  let node: Record<string, unknown> = target;
  for (const [index, step] of steps.entries()) {
    if (index === steps.length - 1) {
      node[step] = value;
      return;
    }
    const existing = node[step];
    if (existing === null || typeof existing !== 'object' || existing instanceof RawJson) {
      node[step] = /^\d+$/.test(steps[index + 1]!) ? [] : {};
    }
    node = node[step] as Record<string, unknown>;
  }
}

/** Strings for header values and query parameters (already in wire form where raw). */
export interface HostileText {
  readonly name: string;
  readonly header: string | Buffer;
  /** The query-string form (percent-encoded or deliberately broken). */
  readonly query: string;
  /** Holds control bytes a header may not carry (RFC 9110): the HTTP parser may refuse it. */
  readonly controlBytes?: boolean;
}

export const hostileTexts: readonly HostileText[] = [
  { name: 'empty', header: '', query: '' },
  {
    name: 'nul-byte',
    header: Buffer.from('a\u0000b', 'latin1'),
    query: 'a%00b',
    controlBytes: true,
  },
  { name: 'lone-surrogate-utf8', header: Buffer.from([0xed, 0xa0, 0x80]), query: '%ED%A0%80' },
  { name: 'invalid-utf8', header: Buffer.from([0xff, 0xfe, 0x41]), query: '%FF%FEA' },
  { name: 'latin1-byte', header: Buffer.from([0xe9]), query: '%E9' },
  { name: 'utf8-accents', header: 'caf\u00e9', query: 'caf%C3%A9' },
  { name: 'broken-percent', header: '%', query: '%' },
  { name: 'double-percent', header: '%%41', query: '%%41' },
  { name: 'plus-and-spaces', header: ' a b ', query: '+a+b+' },
  { name: 'long-300', header: 'u'.repeat(300), query: 'u'.repeat(300) },
  { name: 'long-10k', header: 'v'.repeat(10_000), query: 'v'.repeat(10_000) },
  { name: 'sql-ish', header: "x' OR '1'='1", query: "x'%20OR%20'1'%3D'1" },
  {
    name: 'control-chars',
    header: Buffer.from([0x01, 0x1b, 0x7f]),
    query: '%01%1B%7F',
    controlBytes: true,
  },
];
