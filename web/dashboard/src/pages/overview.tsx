// Overview: the organization, your role, and what it holds. Spend, wallet and usage panels
// arrive with their APIs.
import { useEffect, useState } from 'preact/hooks';
import { api, ApiError, type OrgSummary, type Page } from '../api.js';
import { asApiError } from '../hooks.js';
import type { AppRow } from './apps.js';
import type { ConnectionRow } from './app.js';
import { ComingSoon, ErrorNote, Link, PageHeader } from '../ui.js';

interface Counts {
  readonly apps: number;
  readonly appsMore: boolean;
  readonly connections: number;
  readonly activeConnections: number;
}

export function OverviewPage({ org }: { org: OrgSummary }) {
  const [counts, setCounts] = useState<Counts | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  useEffect(() => {
    let current = true;
    setCounts(null);
    setError(null);
    countObjects(org.id).then(
      (found) => current && setCounts(found),
      (failure: unknown) => current && setError(asApiError(failure)),
    );
    return () => {
      current = false;
    };
  }, [org.id]);
  const value = (n: number | undefined, more = false) =>
    n === undefined ? '…' : `${n}${more ? '+' : ''}`;
  return (
    <>
      <PageHeader title={org.name}>
        Your role here: <strong class="role">{org.role}</strong>
      </PageHeader>
      <ErrorNote error={error} />
      <div class="stats" aria-busy={counts === null && !error}>
        <Link class="stat card" to={{ page: 'apps', orgId: org.id }}>
          <span class="stat-value">{value(counts?.apps, counts?.appsMore)}</span>
          <span class="stat-label">Apps</span>
        </Link>
        <Link class="stat card" to={{ page: 'apps', orgId: org.id }}>
          <span class="stat-value">{value(counts?.activeConnections)}</span>
          <span class="stat-label">
            Active connections
            {counts && counts.connections > counts.activeConnections
              ? ` (${counts.connections - counts.activeConnections} revoked)`
              : ''}
          </span>
        </Link>
      </div>
      <div class="grid">
        <ComingSoon title="Spend this period">
          Spend against your caps appears here once the usage API is available.
        </ComingSoon>
        <ComingSoon title="Wallet balance">
          The organization's wallet balance appears here once the wallet API is available.
        </ComingSoon>
        <ComingSoon title="Requests">
          Request counts appear here once the usage API is available.
        </ComingSoon>
        <ComingSoon title="Top models and users">
          The most used models and product users appear here once the usage API is available.
        </ComingSoon>
      </div>
    </>
  );
}

const LIMIT = 200;

async function countObjects(orgId: string): Promise<Counts> {
  const apps = await api.get<Page<AppRow>>(
    `/dashboard/api/orgs/${encodeURIComponent(orgId)}/apps?limit=${LIMIT}`,
  );
  const lists = await Promise.all(
    apps.data.map((app) =>
      api.get<Page<ConnectionRow>>(
        `/dashboard/api/apps/${encodeURIComponent(app.id)}/connections?limit=${LIMIT}`,
      ),
    ),
  );
  const connections = lists.flatMap((list) => list.data);
  return {
    apps: apps.data.length,
    appsMore: apps.next_cursor !== null,
    connections: connections.length,
    activeConnections: connections.filter((connection) => connection.status === 'active').length,
  };
}
