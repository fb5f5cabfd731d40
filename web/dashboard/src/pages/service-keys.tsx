// Service keys: the organization's keys for the product-user management API (hints only);
// issuing one (the raw key shown once), disabling and revoking.
import { useState } from 'preact/hooks';
import { api, canManage, type OrgSummary } from '../api.js';
import { useAction, usePaged } from '../hooks.js';
import type { IssuedKey, ServiceKeyRow, ServiceKeyScope } from '../types.js';
import {
  Confirm,
  ErrorNote,
  formatTime,
  ListTable,
  PageHeader,
  RowButton,
  ShownOnce,
  Status,
} from '../ui.js';
import type { OrgPage } from './page.js';

export const serviceKeysPage: OrgPage = {
  section: 'service-keys',
  label: 'Service keys',
  Component: ({ org }) => <ServiceKeysPage org={org} />,
};

const SCOPES: readonly { value: ServiceKeyScope; label: string }[] = [
  { value: 'product_users:read', label: 'Read product users and their credits' },
  { value: 'product_users:write', label: 'Create and change product users, grant credits' },
];

type Change = { key: ServiceKeyRow; action: 'disable' | 'revoke' };

function ServiceKeysPage({ org }: { org: OrgSummary }) {
  const base = `/dashboard/api/orgs/${encodeURIComponent(org.id)}/service-keys`;
  const list = usePaged<ServiceKeyRow>(`${base}?limit=200`);
  const [issued, setIssued] = useState<string | null>(null);
  const [change, setChange] = useState<Change | null>(null);
  const manage = canManage(org.role);
  const rows = list.data ? [...list.data].reverse() : null; // newest first
  return (
    <>
      <PageHeader title="Service keys">
        Keys your back end uses for the product-user API (profiles, credits). Never put one in an
        app people download.
      </PageHeader>
      {issued && (
        <ShownOnce title="Your new service key" value={issued} onDone={() => setIssued(null)} />
      )}
      {manage && (
        <CreateServiceKey
          base={base}
          onCreated={(key) => {
            setIssued(key.key);
            list.reload();
          }}
        />
      )}
      <section aria-labelledby="service-keys-heading">
        <h2 id="service-keys-heading">Service keys</h2>
        <ListTable
          list={list}
          rows={rows}
          what="service keys"
          empty="No service keys yet."
          rowKey={(key) => `${key.id}-${key.status}`}
          columns={[
            { header: 'Key', class: 'nowrap', cell: (key) => <code>{key.key_hint}</code> },
            {
              header: 'Scopes',
              class: 'small',
              cell: (key) => key.scopes.map((scope) => <code key={scope}>{scope}</code>),
            },
            { header: 'Status', cell: (key) => <Status value={key.status} /> },
            {
              header: 'Expires',
              class: 'nowrap',
              cell: (key) => (key.expires_at ? formatTime(key.expires_at) : 'never'),
            },
            { header: 'Created', class: 'nowrap', cell: (key) => formatTime(key.created_at) },
          ]}
          actions={(key) =>
            manage &&
            key.status === 'active' && (
              <>
                <RowButton
                  label="Disable…"
                  name={`Disable ${key.key_hint}`}
                  onClick={() => setChange({ key, action: 'disable' })}
                />{' '}
                <RowButton
                  label="Revoke…"
                  name={`Revoke ${key.key_hint}`}
                  danger
                  onClick={() => setChange({ key, action: 'revoke' })}
                />
              </>
            )
          }
        />
      </section>
      {change && (
        <ChangeServiceKey
          change={change}
          onClose={() => setChange(null)}
          onChanged={() => {
            setChange(null);
            list.reload();
          }}
        />
      )}
    </>
  );
}

function CreateServiceKey(props: { base: string; onCreated(key: IssuedKey): void }) {
  const [scopes, setScopes] = useState<ServiceKeyScope[]>(SCOPES.map((scope) => scope.value));
  const [expires, setExpires] = useState('');
  const action = useAction();
  return (
    <form
      class="card"
      aria-labelledby="create-service-key-heading"
      onSubmit={action.submit(
        () =>
          api.create<IssuedKey>(props.base, {
            scopes,
            ...(expires && { expires_at: new Date(expires).toISOString() }),
          }),
        (created) => {
          props.onCreated(created);
          setExpires('');
        },
      )}
    >
      <h2 id="create-service-key-heading">Issue a service key</h2>
      <fieldset>
        <legend>Scopes</legend>
        {SCOPES.map((scope) => (
          <label class="check" key={scope.value}>
            <input
              type="checkbox"
              checked={scopes.includes(scope.value)}
              onChange={(event) =>
                setScopes((current) =>
                  event.currentTarget.checked
                    ? [...current, scope.value]
                    : current.filter((value) => value !== scope.value),
                )
              }
            />
            <code>{scope.value}</code> {scope.label}
          </label>
        ))}
      </fieldset>
      <div class="row">
        <label>
          Expires (optional, your local time)
          <input
            type="datetime-local"
            name="service-key-expires"
            value={expires}
            onInput={(event) => setExpires(event.currentTarget.value)}
          />
        </label>
      </div>
      <ErrorNote error={action.error} />
      <button type="submit" disabled={action.busy}>
        {action.busy ? 'Issuing…' : 'Issue service key'}
      </button>
    </form>
  );
}

function ChangeServiceKey(props: { change: Change; onClose(): void; onChanged(): void }) {
  const { key, action: verb } = props.change;
  return (
    <Confirm
      title={`${verb === 'revoke' ? 'Revoke' : 'Disable'} ${key.key_hint}?`}
      confirmLabel={verb === 'revoke' ? 'Revoke service key' : 'Disable service key'}
      write={() => api.post(`/dashboard/api/service-keys/${encodeURIComponent(key.id)}/${verb}`)}
      onDone={props.onChanged}
      onCancel={props.onClose}
    >
      <p>
        Every gateway instance refuses <code>{key.key_hint}</code> at once: your back end’s calls
        with it to the product-user API fail from now on.{' '}
        {verb === 'revoke'
          ? 'A revoked key is gone for good.'
          : 'The dashboard cannot enable it again; issue a new key instead.'}
      </p>
    </Confirm>
  );
}
