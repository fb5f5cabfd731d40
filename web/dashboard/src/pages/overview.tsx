// Overview: this month's usage (UTC) — cost, requests, tokens, the top models and product
// users — what the organization holds, its spend against the org cap and its wallet balance.
import type { ComponentChildren } from 'preact';
import type { OrgSummary } from '../api.js';
import { useAsync, useLoad } from '../hooks.js';
import { money } from '../money.js';
import { loadProductUsers, productUserLabel } from '../org-data.js';
import { orgView } from '../router.js';
import type { Overview, Usage, UsageRow } from '../types.js';
import { UsageChart } from '../usage-chart.js';
import { addDays, byCost, daysBetween, summarize } from '../usage-data.js';
import {
  Empty,
  ErrorNote,
  isoDay,
  Link,
  Loading,
  Money,
  StatFigure,
  Count,
  PageHeader,
} from '../ui.js';
import type { OrgPage } from './page.js';

export const overviewPage: OrgPage = {
  section: '',
  label: 'Overview',
  Component: ({ org }) => <OverviewPage org={org} />,
};

const TOP = 5;

function OverviewPage({ org }: { org: OrgSummary }) {
  const today = isoDay(new Date());
  const from = `${today.slice(0, 8)}01`;
  const to = addDays(today, 1);
  const base = `/dashboard/api/orgs/${encodeURIComponent(org.id)}/usage?from=${from}&to=${to}`;
  const byModel = useLoad<Usage>(`${base}&group_by=model`);
  const byUser = useLoad<Usage>(`${base}&group_by=product_user&limit=${TOP}`);
  const byDay = useLoad<Usage>(`${base}&group_by=day`);
  const overview = useLoad<Overview>(`/dashboard/api/orgs/${encodeURIComponent(org.id)}/overview`);
  const userIds = (byUser.data?.data ?? [])
    .map((row) => row.key)
    .filter((key): key is string => key !== null);
  const users = useAsync(
    userIds.length > 0 ? () => loadProductUsers(userIds) : null,
    userIds.length > 0 ? userIds.join(',') : null,
  );
  const summary = byModel.data ? summarize(byModel.data.data) : null;
  const currency = summary?.costs[0]?.currency;
  const month = new Date(`${from}T00:00:00Z`).toLocaleDateString(undefined, {
    month: 'long',
    year: 'numeric',
    timeZone: 'UTC',
  });
  // counted by the API: an organization may have thousands of apps and connections
  const counts = overview.data?.counts;

  return (
    <>
      <PageHeader title={org.name}>
        Your role here: <strong class="role">{org.role}</strong> · {month} so far (UTC days)
      </PageHeader>
      {counts && counts.apps === 0 && (
        <p class="card">
          Nothing to show yet: requests come through an app’s connection.{' '}
          <Link to={orgView(org.id, 'apps')}>Create an app first</Link>, then a connection and an
          API key for it.
        </p>
      )}
      <ErrorNote error={byModel.error} />
      <div class="stats" aria-busy={byModel.loading}>
        <Link class="stat card lead" to={orgView(org.id, 'usage')}>
          <StatFigure money>
            {summary ? (
              summary.costs.length === 0 ? (
                <Money value="0" currency={currency ?? 'USD'} />
              ) : (
                summary.costs.map((total) => (
                  <Money key={total.currency} value={total.cost} currency={total.currency} />
                ))
              )
            ) : (
              '…'
            )}
          </StatFigure>
          <span class="stat-label">Spent this month</span>
        </Link>
        <Link class="stat card" to={orgView(org.id, 'usage')}>
          <StatFigure>
            <Count value={summary ? summary.requests : null} />
          </StatFigure>
          <span class="stat-label">Requests this month</span>
        </Link>
        <Link class="stat card" to={orgView(org.id, 'usage')}>
          <StatFigure>
            <Count value={summary ? summary.inputTokens + summary.outputTokens : null} />
          </StatFigure>
          <span class="stat-label">Tokens this month</span>
        </Link>
        <Link class="stat card" to={orgView(org.id, 'apps')}>
          <StatFigure>
            <Count value={counts ? counts.apps : null} />
          </StatFigure>
          <span class="stat-label">Apps</span>
        </Link>
        <Link class="stat card" to={orgView(org.id, 'apps')}>
          <StatFigure>
            <Count value={counts ? counts.active_connections : null} />
          </StatFigure>
          <span class="stat-label">
            Active connections
            {counts && counts.revoked_connections > 0
              ? ` (${counts.revoked_connections.toLocaleString()} revoked)`
              : ''}
          </span>
        </Link>
      </div>
      {byDay.data && byDay.data.data.length > 0 && (
        <section class="overview-chart" aria-labelledby="per-day-heading">
          <h2 id="per-day-heading">Requests per day</h2>
          <UsageChart
            input={{
              kind: 'days',
              labels: daysBetween(from, to),
              values: daysBetween(from, to).map((day) =>
                byDay
                  .data!.data.filter((row) => row.key === day)
                  .reduce((n, row) => n + row.requests, 0),
              ),
              seriesLabel: 'Requests',
              format: (n) => n.toLocaleString(),
              whole: true,
            }}
            description={`Requests per UTC day in ${month}. The usage page lists them.`}
          />
        </section>
      )}
      <div class="grid overview-panels">
        <section class="card" aria-labelledby="top-models-heading">
          <h2 id="top-models-heading">Top models this month</h2>
          {byModel.loading && <Loading what="models" />}
          {byModel.data && (
            <TopList
              rows={byCost(byModel.data.data, currency).slice(0, TOP)}
              label={(key) => <code>{key ?? '(none)'}</code>}
              empty="No requests this month yet."
            />
          )}
        </section>
        <section class="card" aria-labelledby="top-users-heading">
          <h2 id="top-users-heading">Top product users this month</h2>
          <ErrorNote error={byUser.error} />
          {byUser.loading && <Loading what="product users" />}
          {byUser.data && (
            <TopList
              rows={byUser.data.data}
              label={(key) =>
                key === null ? (
                  <span class="muted">requests without a product user</span>
                ) : (
                  <Link to={orgView(org.id, 'users', key)}>
                    {productUserLabel(users.data?.get(key), key)}
                  </Link>
                )
              }
              empty="No product-user requests this month yet."
            />
          )}
        </section>
        <section class="card" aria-labelledby="caps-panel-heading">
          <h2 id="caps-panel-heading">Spend against caps</h2>
          <ErrorNote error={overview.error} />
          {overview.loading && <Loading what="caps" />}
          {overview.data &&
            (overview.data.org_cap ? (
              <p>
                <Money value={overview.data.spent_this_period} currency={overview.data.currency} />{' '}
                of the{' '}
                <Money value={overview.data.org_cap.amount} currency={overview.data.currency} />{' '}
                organization cap this month;{' '}
                <Money value={overview.data.org_cap.remaining} currency={overview.data.currency} />{' '}
                left.
              </p>
            ) : (
              <p class="muted">
                No organization cap: this month’s spend is{' '}
                <Money value={overview.data.spent_this_period} currency={overview.data.currency} />.
              </p>
            ))}
          <Link to={orgView(org.id, 'caps')}>Caps</Link>
        </section>
        <section class="card" aria-labelledby="wallet-panel-heading">
          <h2 id="wallet-panel-heading">Wallet balance</h2>
          {overview.data && (
            <>
              <p class="stat-value money balance">
                <Money value={overview.data.wallet.available} currency={overview.data.currency} />
              </p>
              <p class="muted small">
                available (balance {money(overview.data.wallet.balance, overview.data.currency)},
                held by requests in flight{' '}
                {money(overview.data.wallet.reserved, overview.data.currency)}); paid from it this
                month: {money(overview.data.wallet_cost_this_period, overview.data.currency)}
              </p>
            </>
          )}
          <Link to={orgView(org.id, 'wallet')}>Wallet</Link>
        </section>
      </div>
    </>
  );
}

function TopList(props: {
  rows: readonly UsageRow[];
  label(key: string | null): ComponentChildren;
  empty: string;
}) {
  if (props.rows.length === 0) return <Empty>{props.empty}</Empty>;
  return (
    <ol class="top-list">
      {props.rows.map((row) => (
        <li key={`${row.key ?? ''}-${row.currency}`}>
          <span class="top-name">{props.label(row.key)}</span>
          <span class="top-figures">
            {money(row.cost, row.currency)} · {row.requests.toLocaleString()} req.
          </span>
        </li>
      ))}
    </ol>
  );
}
