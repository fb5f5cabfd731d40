// The audit log: every dashboard write in the organization, newest first.
import type { OrgSummary } from '../api.js';
import { usePaged } from '../hooks.js';
import { Empty, ErrorNote, formatTime, Loading, PageHeader } from '../ui.js';
import type { OrgPage } from './page.js';

interface AuditEntry {
  readonly id: string;
  readonly user_id: string;
  readonly email: string | null;
  readonly action: string;
  readonly object_type: string;
  readonly object_id: string;
  readonly details: Record<string, unknown>;
  readonly created_at: string;
}

export const auditLogPage: OrgPage = {
  section: 'audit-log',
  label: 'Audit log',
  Component: ({ org }) => <AuditLogPage org={org} />,
};

function AuditLogPage({ org }: { org: OrgSummary }) {
  const list = usePaged<AuditEntry>(`/dashboard/api/orgs/${encodeURIComponent(org.id)}/audit-log`);
  return (
    <>
      <PageHeader title="Audit log">
        Every change made in the dashboard for {org.name}: who, what, and when.
      </PageHeader>
      <ErrorNote error={list.error} />
      {list.loading && <Loading what="the audit log" />}
      {list.data && list.data.length === 0 && <Empty>Nothing has been changed yet.</Empty>}
      {list.data && list.data.length > 0 && (
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">When</th>
                <th scope="col">Who</th>
                <th scope="col">Action</th>
                <th scope="col">Object</th>
                <th scope="col">Details</th>
              </tr>
            </thead>
            <tbody>
              {list.data.map((entry) => (
                <tr key={entry.id}>
                  <td class="nowrap">{formatTime(entry.created_at)}</td>
                  <td>{entry.email ?? <code>{entry.user_id}</code>}</td>
                  <td class="nowrap">
                    <code>{entry.action}</code>
                  </td>
                  <td>
                    {entry.object_type} <code>{entry.object_id}</code>
                  </td>
                  <td class="details">
                    {Object.entries(entry.details).map(([key, value]) => (
                      <span key={key} class="pair">
                        {key}: <code>{JSON.stringify(value)}</code>
                      </span>
                    ))}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {list.hasMore && (
        <button type="button" class="secondary" disabled={list.loadingMore} onClick={list.more}>
          {list.loadingMore ? 'Loading…' : 'Show older entries'}
        </button>
      )}
    </>
  );
}
