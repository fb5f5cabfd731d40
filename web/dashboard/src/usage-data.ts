// Reading the usage API's rows: totals (exact per currency), day ranges, CSV.
import { compareDecimals, sumDecimals } from './money.js';
import type { UsageRow } from './types.js';

export interface CurrencyTotal {
  readonly currency: string;
  readonly cost: string;
  readonly walletCost: string;
}

export interface UsageSummary {
  readonly requests: number;
  readonly inputTokens: number;
  readonly outputTokens: number;
  /** Parts of inputTokens: written to the prompt cache (of them for an hour), read from it. */
  readonly cacheWriteTokens: number;
  readonly cacheWrite1hTokens: number;
  readonly cacheReadTokens: number;
  readonly webSearchRequests: number;
  /** One entry per currency, the most spent first. */
  readonly costs: CurrencyTotal[];
}

/** Totals of the rows; a count an older API does not give adds nothing (so none is shown). */
export function summarize(rows: readonly UsageRow[]): UsageSummary {
  const currencies = [...new Set(rows.map((row) => row.currency))];
  const costs = currencies
    .map((currency) => {
      const inCurrency = rows.filter((row) => row.currency === currency);
      return {
        currency,
        cost: sumDecimals(inCurrency.map((row) => row.cost)),
        walletCost: sumDecimals(inCurrency.map((row) => row.wallet_cost)),
      };
    })
    .sort((a, b) => compareDecimals(b.cost, a.cost));
  return {
    requests: rows.reduce((sum, row) => sum + row.requests, 0),
    inputTokens: rows.reduce((sum, row) => sum + row.input_tokens, 0),
    outputTokens: rows.reduce((sum, row) => sum + row.output_tokens, 0),
    cacheWriteTokens: rows.reduce((sum, row) => sum + (row.cache_write_tokens ?? 0), 0),
    cacheWrite1hTokens: rows.reduce((sum, row) => sum + (row.cache_write_1h_tokens ?? 0), 0),
    cacheReadTokens: rows.reduce((sum, row) => sum + (row.cache_read_tokens ?? 0), 0),
    webSearchRequests: rows.reduce((sum, row) => sum + (row.web_search_requests ?? 0), 0),
    costs,
  };
}

/** The groups' rows merged across currencies, ordered by cost in the main currency. */
export function byCost(rows: readonly UsageRow[], currency: string | undefined): UsageRow[] {
  const cost = (row: UsageRow) => (row.currency === currency ? row.cost : '0');
  return [...rows].sort((a, b) => compareDecimals(cost(b), cost(a)) || b.requests - a.requests);
}

const DAY_MS = 24 * 3600 * 1000;

export const addDays = (day: string, days: number): string =>
  new Date(Date.parse(`${day}T00:00:00Z`) + days * DAY_MS).toISOString().slice(0, 10);

/** Every UTC day from `from` up to `to` (exclusive). */
export function daysBetween(from: string, to: string): string[] {
  const days: string[] = [];
  for (let day = from; day < to && days.length <= 366; day = addDays(day, 1)) days.push(day);
  return days;
}

/**
 * A cell of the CSV; empty for a null key, and for a count the API did not give (undefined).
 * Text a spreadsheet would read as a formula (= + - @, tab, carriage return first: a product
 * user's display name or external id is its end user's own) starts with ' to stay text; a
 * plain number (a negative amount) is left as it is.
 */
const csvCell = (value: string | number | null | undefined): string => {
  const text = value === null || value === undefined ? '' : String(value);
  const formula = /^[=+\-@\t\r]/.test(text) && !/^-?\d+(\.\d+)?$/.test(text);
  const inert = formula ? `'${text}` : text;
  return /[",\n\r]/.test(inert) ? `"${inert.replace(/"/g, '""')}"` : inert;
};

/**
 * What of a prompt the cache read and wrote, as parts of a note ("900 cache read · 6 cache
 * write (2 for 1 h)"), each in pieces a narrow column may break between; none when it did
 * neither.
 */
export function cacheNote(counts: {
  readonly read: number;
  readonly write: number;
  readonly write1h: number;
}): string[][] {
  const parts: string[][] = [];
  if (counts.read > 0) parts.push([`${counts.read.toLocaleString()} cache read`]);
  if (counts.write > 0) {
    const write = `${counts.write.toLocaleString()} cache write`;
    parts.push(
      counts.write1h > 0 ? [write, `(${counts.write1h.toLocaleString()} for 1 h)`] : [write],
    );
  }
  return parts;
}

/**
 * The rows as CSV, money exactly as the API gave it; a count the API did not give (an older
 * version's answer) is an empty cell, not a zero it did not say.
 */
export function usageCsv(
  groupBy: string,
  rows: readonly UsageRow[],
  labelOf: (key: string | null) => string,
): string {
  const header = [
    groupBy,
    'label',
    'currency',
    'requests',
    'input_tokens',
    'output_tokens',
    'total_tokens',
    'cache_write_tokens',
    'cache_write_1h_tokens',
    'cache_read_tokens',
    'web_search_requests',
    'cost',
    'wallet_cost',
  ];
  const lines = rows.map((row) =>
    [
      row.key,
      labelOf(row.key),
      row.currency,
      row.requests,
      row.input_tokens,
      row.output_tokens,
      row.total_tokens,
      row.cache_write_tokens,
      row.cache_write_1h_tokens,
      row.cache_read_tokens,
      row.web_search_requests,
      row.cost,
      row.wallet_cost,
    ]
      .map(csvCell)
      .join(','),
  );
  return [header.join(','), ...lines].join('\r\n') + '\r\n';
}
