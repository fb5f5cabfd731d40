// The audit log: every change to the organization made in the dashboard or with the gw CLI,
// newest first.
import type { ComponentChildren } from 'preact';
import { canManage, type OrgSummary } from '../api.js';
import { exactAmount, isApiAmount } from '../money.js';
import { usePaged, type Paged } from '../hooks.js';
import { formatTime, Id, ListTable, PageHeader } from '../ui.js';
import type { AuditEntry } from '../types.js';
import type { OrgPage } from './page.js';

export const auditLogPage: OrgPage = {
  section: 'audit-log',
  label: 'Audit log',
  Component: ({ org }) => <AuditLogPage org={org} />,
};

function AuditLogPage({ org }: { org: OrgSummary }) {
  return (
    <>
      <PageHeader title="Audit log">
        Every change made to {org.name} in the dashboard or with the operator’s gw CLI: who, what,
        and when.
      </PageHeader>
      {canManage(org.role) ? (
        <AuditLog org={org} />
      ) : (
        <p class="muted">Only admins and owners of this organization read its audit log.</p>
      )}
    </>
  );
}

/** A detail's value: the API's money as the dashboard shows amounts, the rest as JSON. */
const detailValue = (value: unknown): string =>
  isApiAmount(value) ? exactAmount(value) : JSON.stringify(value);

function AuditLog({ org }: { org: OrgSummary }) {
  const list = usePaged<AuditEntry>(`/dashboard/api/orgs/${encodeURIComponent(org.id)}/audit-log`);
  return (
    <AuditEntries
      list={list}
      empty="Nothing has been changed yet."
      by={{
        header: 'Who',
        class: 'breakable',
        cell: (entry) => entry.email ?? <code>{entry.user_id}</code>,
      }}
    />
  );
}

/**
 * Audit entries in a table, newest first: when, `by` (who made the change, or in which
 * organization), the action, its object and its details.
 */
export function AuditEntries<Entry extends AuditEntry>(props: {
  list: Paged<Entry>;
  empty: string;
  by: { header: string; class?: string; cell(entry: Entry): ComponentChildren };
}) {
  return (
    <ListTable
      list={props.list}
      rows={props.list.data}
      what="entries"
      empty={props.empty}
      rowKey={(entry) => entry.id}
      columns={[
        { header: 'When', class: 'nowrap', cell: (entry) => formatTime(entry.created_at) },
        props.by,
        { header: 'Action', class: 'nowrap', cell: (entry) => <code>{entry.action}</code> },
        {
          header: 'Object',
          cell: (entry) => (
            <>
              {entry.object_type} <Id value={entry.object_id} />
            </>
          ),
        },
        {
          header: 'Details',
          class: 'details',
          cell: (entry) =>
            Object.entries(entry.details).map(([key, value]) => (
              <span key={key} class="pair">
                {key}: <code>{detailValue(value)}</code>
              </span>
            )),
        },
      ]}
    />
  );
}
