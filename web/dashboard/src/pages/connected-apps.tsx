// Connected apps: apps people connected through OAuth that this organization's wallet pays
// for, with what each spent, its monthly cap (set on the consent page, changed or removed here
// by admins: decision 415), its token's rate limits (changed here by admins, as a key's are:
// decision 352), and revoking one (its token stops at once).
import { useState } from 'preact/hooks';
import { api, canManage, type OrgSummary } from '../api.js';
import { usePaged } from '../hooks.js';
import { Confirm, formatTime, ListTable, Money, PageHeader, RowButton, Status } from '../ui.js';
import { ConnectionCap } from './connection-cap.js';
import { EditLimits, LimitsCell } from './key-limits.js';
import type { OrgPage } from './page.js';
import type { ConnectedApp } from '../types.js';

export const connectedAppsPage: OrgPage = {
  section: 'connected-apps',
  label: 'Connected apps',
  Component: ({ org }) => <ConnectedAppsPage org={org} />,
};

/** Revoking is a spending decision: any member but a viewer may (as the API says). */
const canRevoke = (role: OrgSummary['role']): boolean => role !== 'viewer';

function ConnectedAppsPage({ org }: { org: OrgSummary }) {
  const list = usePaged<ConnectedApp>(
    `/dashboard/api/orgs/${encodeURIComponent(org.id)}/connected-apps?limit=200`,
  );
  const [revoking, setRevoking] = useState<ConnectedApp | null>(null);
  const [editing, setEditing] = useState<string | null>(null);
  const [editingCap, setEditingCap] = useState<string | null>(null);
  const revoke = canRevoke(org.role);
  // the limits are the token's, changed as an API key's are: by admins and owners
  const editable = (app: ConnectedApp): app is ConnectedApp & { token_id: string } =>
    canManage(org.role) && app.status === 'active' && app.token_id !== null;
  const edited = editing === null ? undefined : list.data?.find((app) => app.id === editing);
  // the cap is the connection's, changed as any connection cap is: by admins and owners
  const cappable = (app: ConnectedApp): boolean => canManage(org.role) && app.status === 'active';
  const capEdited =
    editingCap === null ? undefined : list.data?.find((app) => app.id === editingCap);
  return (
    <>
      <PageHeader title="Connected apps">
        Apps you allowed, through OAuth sign-in, to make requests paid from this organization’s
        wallet. A monthly cap bounds what an app may spend; rate limits slow it down; revoking it
        stops it.
      </PageHeader>
      <section aria-labelledby="connected-apps-heading">
        <h2 id="connected-apps-heading">Connected apps</h2>
        <ListTable
          list={list}
          rows={list.data}
          what="connected apps"
          empty="No app is connected to this organization."
          rowKey={(app) => `${app.id}-${app.status}`}
          columns={[
            {
              // who connected it and when under its name: a column of its own would not let the
              // table fit a 1000 px window (an e-mail address is one long word)
              header: 'App',
              class: 'breakable',
              cell: (app) => (
                <>
                  {app.app_name}
                  {app.client_name && <div class="muted small">{app.client_name}</div>}
                  <div class="muted small">
                    Connected {formatTime(app.created_at)}
                    {app.connected_by && ` by ${app.connected_by}`}
                  </div>
                </>
              ),
            },
            {
              header: 'Status',
              cell: (app) => (
                <>
                  <Status value={app.status} />
                  {app.revoked_at && <div class="muted small">{formatTime(app.revoked_at)}</div>}
                </>
              ),
            },
            {
              header: 'Rate limits',
              class: 'small',
              cell: (app) => (
                <LimitsCell
                  limits={app}
                  name={app.app_name}
                  editing={editing === app.id}
                  onEdit={
                    editable(app)
                      ? () => {
                          setEditingCap(null);
                          setEditing(editing === app.id ? null : app.id);
                        }
                      : null
                  }
                />
              ),
            },
            {
              // what it spent beside what it may spend: its monthly cap (decision 415)
              header: 'Spent this month',
              numeric: true,
              class: 'nowrap',
              cell: (app) => (
                <>
                  <Spent spend={app.spend.this_month} currency={app.currency} />
                  <span class="cap-cell small">
                    <span>
                      <CapCell app={app} />
                    </span>
                    {cappable(app) && (
                      <button
                        type="button"
                        class="secondary small-button"
                        aria-label={`Edit cap of ${app.app_name}`}
                        aria-expanded={editingCap === app.id}
                        onClick={() => {
                          setEditing(null);
                          setEditingCap(editingCap === app.id ? null : app.id);
                        }}
                      >
                        Edit
                      </button>
                    )}
                  </span>
                </>
              ),
            },
            {
              header: 'Spent in total',
              numeric: true,
              class: 'nowrap',
              cell: (app) => <Spent spend={app.spend.total} currency={app.currency} />,
            },
          ]}
          actions={(app) =>
            revoke &&
            app.status === 'active' && (
              <RowButton
                label="Revoke…"
                name={`Revoke ${app.app_name}`}
                danger
                onClick={() => setRevoking(app)}
              />
            )
          }
        />
      </section>
      {capEdited && cappable(capEdited) && (
        <ConnectionCap
          key={capEdited.id}
          connectionId={capEdited.id}
          manage
          app={{
            name: capEdited.app_name,
            spentThisMonth: capEdited.spend.this_month.cost,
            currency: capEdited.currency,
            onSaved: list.reload,
            onClose: () => setEditingCap(null),
          }}
        />
      )}
      {edited && editable(edited) && (
        <EditLimits
          key={edited.id}
          limited={{ ...edited, id: edited.token_id }}
          name={edited.app_name}
          holder="app"
          onSaved={list.reload}
          onClose={() => setEditing(null)}
        />
      )}
      {revoking && (
        <RevokeConnectedApp
          app={revoking}
          onClose={() => setRevoking(null)}
          onRevoked={() => {
            setRevoking(null);
            list.reload();
          }}
        />
      )}
    </>
  );
}

function RevokeConnectedApp(props: { app: ConnectedApp; onClose(): void; onRevoked(): void }) {
  return (
    <Confirm
      title={`Revoke ${props.app.app_name}?`}
      confirmLabel="Revoke connected app"
      write={() =>
        api.post(`/dashboard/api/connected-apps/${encodeURIComponent(props.app.id)}/revoke`)
      }
      onDone={props.onRevoked}
      onCancel={props.onClose}
    >
      <p>
        Every gateway instance refuses the app’s token within a second: it can no longer make
        requests paid by this organization. Requests already running finish. To use it again,
        connect it anew.
      </p>
    </Confirm>
  );
}

/** Under what the app spent this month in the list: its monthly cap, or that it has none. */
function CapCell({ app }: { app: ConnectedApp }) {
  return app.monthly_cap === null ? (
    <span class="muted">no cap</span>
  ) : (
    <>
      cap <Money value={app.monthly_cap} currency={app.currency} />
    </>
  );
}

/** What a connected app spent in a period, and in how many requests. */
function Spent({ spend, currency }: { spend: ConnectedApp['spend']['total']; currency: string }) {
  return (
    <>
      <Money value={spend.cost} currency={currency} />
      <div class="muted small">{spend.requests.toLocaleString()} req.</div>
    </>
  );
}
