// Usage: requests, tokens and cost per day, model, connection or product user over a chosen
// range of UTC days, as a chart and a table, with a CSV export of exactly what the API gave.
// The table says under the input tokens what the prompt cache read and wrote of them, and
// counts web searches when there were any.
import { Fragment } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import type { OrgSummary } from '../api.js';
import type { ChartInput } from '../chart.js';
import { useAsync, useLoad } from '../hooks.js';
import { approximately, money } from '../money.js';
import {
  connectionLabel,
  loadProductUsers,
  productUserLabel,
  useConnectionsById,
} from '../org-data.js';
import { orgView } from '../router.js';
import type { Usage, UsageGroup, UsageRow } from '../types.js';
import { UsageChart } from '../usage-chart.js';
import { addDays, byCost, cacheNote, daysBetween, summarize, usageCsv } from '../usage-data.js';
import {
  Count,
  Empty,
  ErrorNote,
  isoDay,
  Link,
  Loading,
  Money,
  PageHeader,
  StatFigure,
  TableScroller,
} from '../ui.js';
import type { OrgPage } from './page.js';

export const usagePage: OrgPage = {
  section: 'usage',
  label: 'Usage',
  Component: ({ org }) => <UsagePage org={org} />,
};

const GROUPS: readonly { value: UsageGroup; label: string }[] = [
  { value: 'day', label: 'Day' },
  { value: 'model', label: 'Model' },
  { value: 'connection', label: 'Connection' },
  { value: 'product_user', label: 'Product user' },
];

type Metric = 'cost' | 'requests' | 'tokens';
const METRICS: readonly { value: Metric; label: string }[] = [
  { value: 'cost', label: 'Cost' },
  { value: 'requests', label: 'Requests' },
  { value: 'tokens', label: 'Tokens' },
];

const PRESETS = [
  { value: '7', label: 'Last 7 days' },
  { value: '30', label: 'Last 30 days' },
  { value: '90', label: 'Last 90 days' },
  { value: 'month', label: 'This month' },
  { value: 'custom', label: 'Custom range' },
] as const;
type Preset = (typeof PRESETS)[number]['value'];

/** The first and the last day (inclusive, UTC) a preset covers. */
function presetRange(
  preset: Preset,
  today = isoDay(new Date()),
): { from: string; through: string } {
  if (preset === 'month') return { from: `${today.slice(0, 8)}01`, through: today };
  const days = preset === 'custom' ? 30 : Number(preset);
  return { from: addDays(today, 1 - days), through: today };
}

/** Product users named on the chart (each is one profile request). */
const NAMED_USERS = 12;
/** Groups on a category chart; the table and the CSV hold them all. */
const CHARTED_GROUPS = 15;

interface Settings {
  readonly preset: Preset;
  readonly range: { readonly from: string; readonly through: string };
  readonly group: UsageGroup;
  readonly metric: Metric;
}

const DAY = /^\d{4}-\d{2}-\d{2}$/;
const oneOf = <T extends string>(
  options: readonly { value: T }[],
  value: string | null,
  fallback: T,
): T => options.find((option) => option.value === value)?.value ?? fallback;

/**
 * The settings the page's URL names (`?range=custom&from=…&through=…&group=model&plot=tokens`),
 * so a view can be bookmarked, shared and reloaded; what it does not name is the default.
 */
function settingsFromUrl(): Settings {
  const query = new URLSearchParams(location.search);
  const preset = oneOf(PRESETS, query.get('range'), '30');
  const from = query.get('from') ?? '';
  const through = query.get('through') ?? '';
  const range =
    preset === 'custom' && DAY.test(from) && DAY.test(through)
      ? { from, through }
      : presetRange(preset);
  return {
    preset,
    range,
    group: oneOf(GROUPS, query.get('group'), 'day'),
    metric: oneOf(METRICS, query.get('plot'), 'cost'),
  };
}

function settingsToUrl({ preset, range, group, metric }: Settings): void {
  const query = new URLSearchParams({ range: preset });
  if (preset === 'custom') {
    query.set('from', range.from);
    query.set('through', range.through);
  }
  query.set('group', group);
  query.set('plot', metric);
  const search = `?${query.toString()}`;
  if (search !== location.search) history.replaceState(history.state, '', search);
}

function UsagePage({ org }: { org: OrgSummary }) {
  const [initial] = useState(settingsFromUrl);
  const [preset, setPreset] = useState<Preset>(initial.preset);
  const [range, setRange] = useState(initial.range);
  const [group, setGroup] = useState<UsageGroup>(initial.group);
  const [metric, setMetric] = useState<Metric>(initial.metric);
  useEffect(
    () => settingsToUrl({ preset, range, group, metric }),
    [preset, range.from, range.through, group, metric],
  );
  const to = addDays(range.through, 1); // the API's `to` is exclusive
  const invalid = range.from > range.through;
  const usage = useLoad<Usage>(
    invalid
      ? null
      : `/dashboard/api/orgs/${encodeURIComponent(org.id)}/usage?group_by=${group}&from=${range.from}&to=${to}&limit=1000`,
  );
  const rows = usage.data?.group_by === group ? usage.data.data : null;
  // the rows' connections, looked up by id (a request per 200): the table and the CSV name them
  const connections = useConnectionsById(
    org.id,
    group === 'connection' && rows
      ? rows.map((row) => row.key).filter((key): key is string => key !== null)
      : [],
  );
  const topUserIds =
    group === 'product_user' && rows
      ? [...new Set(rows.map((row) => row.key).filter((key): key is string => key !== null))].slice(
          0,
          NAMED_USERS,
        )
      : [];
  const users = useAsync(
    topUserIds.length > 0 ? () => loadProductUsers(topUserIds) : null,
    topUserIds.length > 0 ? topUserIds.join(',') : null,
  );

  const labelOf = (key: string | null): string => {
    if (key === null) return group === 'product_user' ? 'no product user' : '(none)';
    if (group === 'connection') return connectionLabel(connections.data, key);
    if (group === 'product_user') return productUserLabel(users.data?.get(key), key);
    return key;
  };

  const summary = rows ? summarize(rows) : null;
  const currency = summary?.costs[0]?.currency;
  const ordered = rows ? (group === 'day' ? rows : byCost(rows, currency)) : null;

  return (
    <>
      <PageHeader title="Usage">
        What {org.name} used through gw, per UTC day, model, connection or product user.
      </PageHeader>
      <form
        class="card controls"
        aria-label="What to show"
        onSubmit={(event) => event.preventDefault()}
      >
        <div class="field">
          <label for="usage-preset">Range</label>
          <select
            id="usage-preset"
            value={preset}
            onChange={(event) => {
              const value = event.currentTarget.value as Preset;
              setPreset(value);
              if (value !== 'custom') setRange(presetRange(value));
            }}
          >
            {PRESETS.map((option) => (
              <option key={option.value} value={option.value}>
                {option.label}
              </option>
            ))}
          </select>
        </div>
        <label>
          From (UTC day)
          <input
            type="date"
            name="usage-from"
            required
            value={range.from}
            onChange={(event) => {
              const from = event.currentTarget.value;
              if (!from) return;
              setPreset('custom');
              setRange((current) => ({ ...current, from }));
            }}
          />
        </label>
        <label>
          Through (UTC day)
          <input
            type="date"
            name="usage-through"
            required
            value={range.through}
            onChange={(event) => {
              const through = event.currentTarget.value;
              if (!through) return;
              setPreset('custom');
              setRange((current) => ({ ...current, through }));
            }}
          />
        </label>
        <div class="field">
          <label for="usage-group">Group by</label>
          <select
            id="usage-group"
            value={group}
            onChange={(event) => setGroup(event.currentTarget.value as UsageGroup)}
          >
            {GROUPS.map((option) => (
              <option key={option.value} value={option.value}>
                {option.label}
              </option>
            ))}
          </select>
        </div>
        <div class="field">
          <label for="usage-metric">Plot</label>
          <select
            id="usage-metric"
            value={metric}
            onChange={(event) => setMetric(event.currentTarget.value as Metric)}
          >
            {METRICS.map((option) => (
              <option key={option.value} value={option.value}>
                {option.label}
              </option>
            ))}
          </select>
        </div>
      </form>
      {invalid && (
        <p class="error" role="alert">
          The first day must not be after the last.
        </p>
      )}
      <ErrorNote error={usage.error} />
      {usage.loading && <Loading what="usage" />}
      {summary && <Totals summary={summary} />}
      {rows && rows.length === 0 && (
        <Empty>
          No requests between {range.from} and {range.through}. Requests made with this
          organization’s API keys appear here within seconds.
        </Empty>
      )}
      {rows && ordered && rows.length > 0 && (
        <>
          <UsageChart
            input={chartInput(group, metric, ordered, range.from, to, currency, labelOf)}
            description={`${METRICS.find((m) => m.value === metric)?.label} by ${GROUPS.find((g) => g.value === group)?.label.toLowerCase()}, ${range.from} to ${range.through}. The table below lists the same numbers.`}
          />
          <div class="table-actions">
            <button
              type="button"
              class="secondary"
              onClick={() =>
                download(
                  `usage-${org.id}-${group}-${range.from}-to-${range.through}.csv`,
                  usageCsv(group, ordered, labelOf),
                )
              }
            >
              Export CSV
            </button>
          </div>
          <UsageTable group={group} orgId={org.id} rows={ordered} labelOf={labelOf} />
        </>
      )}
    </>
  );
}

function chartInput(
  group: UsageGroup,
  metric: Metric,
  rows: readonly UsageRow[],
  from: string,
  to: string,
  currency: string | undefined,
  labelOf: (key: string | null) => string,
): ChartInput {
  // Cost is plotted in the main currency; counts add up across currencies.
  const value = (row: UsageRow): number =>
    metric === 'requests'
      ? row.requests
      : metric === 'tokens'
        ? row.total_tokens
        : row.currency === currency
          ? approximately(row.cost)
          : 0;
  // the currency is in the series' name; the axis keeps to the figures
  const format = (n: number): string =>
    metric === 'cost'
      ? n.toLocaleString(undefined, { maximumSignificantDigits: 6 })
      : n.toLocaleString();
  const whole = metric !== 'cost';
  const seriesLabel =
    metric === 'cost' ? `Cost (${currency ?? ''})` : metric === 'requests' ? 'Requests' : 'Tokens';
  if (group === 'day') {
    const labels = daysBetween(from, to);
    const totals = new Map<string, number>();
    for (const row of rows)
      totals.set(row.key ?? '', (totals.get(row.key ?? '') ?? 0) + value(row));
    return {
      kind: 'days',
      labels,
      values: labels.map((day) => totals.get(day) ?? 0),
      seriesLabel,
      format,
      whole,
    };
  }
  const totals = new Map<string | null, number>();
  for (const row of rows) totals.set(row.key, (totals.get(row.key) ?? 0) + value(row));
  const top = [...totals.entries()].sort((a, b) => b[1] - a[1]).slice(0, CHARTED_GROUPS);
  return {
    kind: 'categories',
    labels: top.map(([key]) => labelOf(key)),
    values: top.map(([, total]) => total),
    seriesLabel,
    format,
    whole,
  };
}

function Totals({ summary }: { summary: ReturnType<typeof summarize> }) {
  const cached = cacheNote({
    read: summary.cacheReadTokens,
    write: summary.cacheWriteTokens,
    write1h: summary.cacheWrite1hTokens,
  });
  return (
    <div class="stats" aria-label="Totals of the range">
      <div class="stat card">
        <StatFigure>
          <Count value={summary.requests} />
        </StatFigure>
        <span class="stat-label">Requests</span>
      </div>
      <div class="stat card">
        <StatFigure>
          <Count value={summary.inputTokens + summary.outputTokens} />
        </StatFigure>
        <span class="stat-label">
          Tokens ({summary.inputTokens.toLocaleString()} in, {summary.outputTokens.toLocaleString()}{' '}
          out)
        </span>
        {cached.length > 0 && (
          <span class="stat-label small">
            of the input: <NoteParts parts={cached} />
          </span>
        )}
      </div>
      {summary.webSearchRequests > 0 && (
        <div class="stat card">
          <StatFigure>
            <Count value={summary.webSearchRequests} />
          </StatFigure>
          <span class="stat-label">Web searches</span>
        </div>
      )}
      {summary.costs.map((total) => (
        <div class="stat card" key={total.currency}>
          <StatFigure money>
            <Money value={total.cost} currency={total.currency} />
          </StatFigure>
          <span class="stat-label">Cost · wallet {money(total.walletCost, total.currency)}</span>
        </div>
      ))}
    </div>
  );
}

function UsageTable(props: {
  group: UsageGroup;
  orgId: string;
  rows: readonly UsageRow[];
  labelOf(key: string | null): string;
}) {
  const heading = GROUPS.find((group) => group.value === props.group)?.label ?? 'Group';
  // a column of web searches only for a range that had any (an older API gives none)
  const searches = props.rows.some((row) => (row.web_search_requests ?? 0) > 0);
  return (
    <TableScroller>
      <table>
        <caption class="visually-hidden">Usage by {heading.toLowerCase()}</caption>
        <thead>
          <tr>
            <th scope="col">{heading}</th>
            <th scope="col" class="num">
              Requests
            </th>
            <th scope="col" class="num">
              Input tokens
            </th>
            <th scope="col" class="num">
              Output tokens
            </th>
            {searches && (
              <th scope="col" class="num">
                Searches
              </th>
            )}
            <th scope="col" class="num">
              Cost
            </th>
            <th scope="col" class="num">
              Wallet cost
            </th>
          </tr>
        </thead>
        <tbody>
          {props.rows.map((row) => (
            <tr key={`${row.key ?? ''}-${row.currency}`}>
              {/* a model id stays one piece; a name (a key's, a product user's) may break */}
              <th scope="row" class={props.group === 'model' ? undefined : 'breakable name'}>
                {props.group === 'product_user' && row.key ? (
                  <Link to={orgView(props.orgId, 'users', row.key)}>{props.labelOf(row.key)}</Link>
                ) : props.group === 'model' ? (
                  <code>{props.labelOf(row.key)}</code>
                ) : (
                  props.labelOf(row.key)
                )}
              </th>
              <td class="num">{row.requests.toLocaleString()}</td>
              <td class="num">
                {row.input_tokens.toLocaleString()}
                <CacheNote row={row} />
              </td>
              <td class="num">{row.output_tokens.toLocaleString()}</td>
              {searches && <td class="num">{row.web_search_requests?.toLocaleString()}</td>}
              <td class="num">{money(row.cost, row.currency)}</td>
              <td class="num">{money(row.wallet_cost, row.currency)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </TableScroller>
  );
}

function CacheNote({ row }: { row: UsageRow }) {
  const note = cacheNote({
    // an older API gives no cache parts: no note
    read: row.cache_read_tokens ?? 0,
    write: row.cache_write_tokens ?? 0,
    write1h: row.cache_write_1h_tokens ?? 0,
  });
  return note.length > 0 ? (
    <span class="cell-note">
      <NoteParts parts={note} />
    </span>
  ) : null;
}

/** A note's parts, wrapped between their pieces, never inside one. */
function NoteParts({ parts }: { parts: readonly (readonly string[])[] }) {
  return (
    <>
      {parts.map((pieces, index) => (
        <Fragment key={pieces[0]}>
          {index > 0 && ' · '}
          {pieces.map((piece, at) => (
            <Fragment key={piece}>
              {at > 0 && ' '}
              <span class="nowrap">{piece}</span>
            </Fragment>
          ))}
        </Fragment>
      ))}
    </>
  );
}

function download(name: string, text: string): void {
  const url = URL.createObjectURL(new Blob([text], { type: 'text/csv;charset=utf-8' }));
  const link = document.createElement('a');
  link.href = url;
  link.download = name;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}
