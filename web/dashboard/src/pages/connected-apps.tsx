// Connected apps: apps people connected through OAuth that this organization's wallet pays
// for, with what each spent, and revoking one (its token stops at once).
import { useState } from 'preact/hooks';
import { api, type OrgSummary } from '../api.js';
import { useAction, usePaged } from '../hooks.js';
import {
  Confirm,
  Empty,
  ErrorNote,
  formatTime,
  Loading,
  Money,
  MoreButton,
  PageHeader,
  Status,
} from '../ui.js';
import type { OrgPage } from './page.js';

export const connectedAppsPage: OrgPage = {
  section: 'connected-apps',
  label: 'Connected apps',
  Component: ({ org }) => <ConnectedAppsPage org={org} />,
};

interface Spend {
  readonly cost: string;
  readonly wallet_cost: string;
  readonly requests: number;
}

interface ConnectedApp {
  readonly id: string;
  readonly app_name: string;
  readonly client_name: string | null;
  readonly status: 'active' | 'revoked';
  readonly connected_by: string | null;
  readonly token_issued_at: string | null;
  readonly created_at: string;
  readonly revoked_at: string | null;
  readonly currency: string;
  readonly spend: { readonly this_month: Spend; readonly total: Spend };
}

/** Revoking is a spending decision: any member but a viewer may (as the API says). */
const canRevoke = (role: OrgSummary['role']): boolean => role !== 'viewer';

function ConnectedAppsPage({ org }: { org: OrgSummary }) {
  const list = usePaged<ConnectedApp>(
    `/dashboard/api/orgs/${encodeURIComponent(org.id)}/connected-apps?limit=200`,
  );
  const [revoking, setRevoking] = useState<ConnectedApp | null>(null);
  const revoke = canRevoke(org.role);
  return (
    <>
      <PageHeader title="Connected apps">
        Apps you allowed, through OAuth sign-in, to make requests paid from this organization’s
        wallet.
      </PageHeader>
      <section aria-labelledby="connected-apps-heading">
        <h2 id="connected-apps-heading">Connected apps</h2>
        <ErrorNote error={list.error} />
        {list.loading && <Loading what="connected apps" />}
        {list.data && list.data.length === 0 && (
          <Empty>No app is connected to this organization.</Empty>
        )}
        {list.data && list.data.length > 0 && (
          <div class="table-wrap">
            <table>
              <thead>
                <tr>
                  <th scope="col">App</th>
                  <th scope="col">Connected by</th>
                  <th scope="col">Status</th>
                  <th scope="col" class="num">
                    Spent this month
                  </th>
                  <th scope="col" class="num">
                    Spent in total
                  </th>
                  <th scope="col">
                    <span class="visually-hidden">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {list.data.map((app) => (
                  <tr key={`${app.id}-${app.status}`}>
                    <td>
                      {app.app_name}
                      {app.client_name && <div class="muted small">{app.client_name}</div>}
                    </td>
                    <td class="small">
                      {app.connected_by ?? '—'}
                      <div class="muted">{formatTime(app.created_at)}</div>
                    </td>
                    <td>
                      <Status value={app.status} />
                      {app.revoked_at && (
                        <div class="muted small">{formatTime(app.revoked_at)}</div>
                      )}
                    </td>
                    <td class="num nowrap">
                      <Money value={app.spend.this_month.cost} currency={app.currency} />
                      <div class="muted small">
                        {app.spend.this_month.requests.toLocaleString()} req.
                      </div>
                    </td>
                    <td class="num nowrap">
                      <Money value={app.spend.total.cost} currency={app.currency} />
                      <div class="muted small">
                        {app.spend.total.requests.toLocaleString()} req.
                      </div>
                    </td>
                    <td class="row-actions">
                      {revoke && app.status === 'active' && (
                        <button
                          type="button"
                          class="danger secondary"
                          aria-label={`Revoke ${app.app_name}`}
                          onClick={() => setRevoking(app)}
                        >
                          Revoke…
                        </button>
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
        <MoreButton list={list} what="connected apps" />
      </section>
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
  const action = useAction();
  return (
    <Confirm
      title={`Revoke ${props.app.app_name}?`}
      confirmLabel="Revoke connected app"
      busy={action.busy}
      error={action.error}
      onCancel={props.onClose}
      onConfirm={() => {
        void action
          .run(() =>
            api.post(`/dashboard/api/connected-apps/${encodeURIComponent(props.app.id)}/revoke`),
          )
          .then((done) => done && props.onRevoked());
      }}
    >
      <p>
        Every gateway instance refuses the app’s token within a second: it can no longer make
        requests paid by this organization. Requests already running finish. To use it again,
        connect it anew.
      </p>
    </Confirm>
  );
}
