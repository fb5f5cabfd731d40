// One app: its connections, each with its settings; create, change and revoke them; and its
// OAuth clients.
import { useState } from 'preact/hooks';
import { api, canManage, type OrgSummary } from '../api.js';
import { useAction, useEditedField, useLoad, useNotice, usePaged } from '../hooks.js';
import { navigate, orgView } from '../router.js';
import type { AppDetail, ConnectionRow } from '../types.js';
import {
  Confirm,
  ErrorNote,
  formatTime,
  Id,
  Link,
  ListState,
  Loading,
  MoreButton,
  NameField,
  PageHeader,
  Status,
} from '../ui.js';
import { defaultSettings, type ConnectionSettings } from './connection-settings.js';
import { OAuthClients } from './oauth-clients.js';
import { SettingsFields } from './settings-fields.js';

export function AppPage({ org, appId }: { org: OrgSummary; appId: string }) {
  const path = `/dashboard/api/apps/${encodeURIComponent(appId)}`;
  const app = useLoad<AppDetail>(path);
  const manage = canManage(org.role);
  const crumbs = (
    <p class="crumbs">
      <Link to={orgView(org.id, 'apps')}>Apps</Link> <span aria-hidden="true">›</span>
    </p>
  );
  if (app.error?.status === 404) {
    return (
      <>
        {crumbs}
        <PageHeader title="No such app">
          This organization has no app <Id value={appId} />.
        </PageHeader>
        <p>
          <Link to={orgView(org.id, 'apps')}>See all apps</Link>
        </p>
      </>
    );
  }
  if (!app.data) {
    return (
      <>
        {crumbs}
        <PageHeader title="App" />
        <ErrorNote error={app.error} />
        {app.loading && <Loading what="the app" />}
      </>
    );
  }
  const active = app.data.status === 'active';
  return (
    <>
      {crumbs}
      <PageHeader
        title={app.data.name}
        facts={
          <>
            <Id value={appId} /> · <Status value={app.data.status} />
          </>
        }
      >
        Connections of this app. Each connection’s API keys follow its settings at once.
      </PageHeader>
      {manage && active && (
        <AppSettings orgId={org.id} path={path} app={app.data} onRenamed={app.reload} />
      )}
      <Connections orgId={org.id} appId={appId} manage={manage && active} />
      <OAuthClients appId={appId} manage={manage && active} />
    </>
  );
}

/** Renaming and deleting the app (admins and owners). */
function AppSettings(props: { orgId: string; path: string; app: AppDetail; onRenamed(): void }) {
  const [name, setName] = useState(props.app.name);
  const [deleting, setDeleting] = useState(false);
  const [saved, setSaved] = useNotice<true>();
  const action = useAction();
  const renamed = name.trim() !== props.app.name;
  const { connections, api_keys: keys } = props.app.counts;
  return (
    <form
      class="card inline-form"
      aria-labelledby="app-settings-heading"
      onInput={() => {
        action.clear();
        setSaved(null);
      }}
      onSubmit={action.submit(
        () => api.patch(props.path, { name: name.trim() }),
        () => {
          setSaved(true);
          props.onRenamed();
        },
      )}
    >
      <h2 id="app-settings-heading">App</h2>
      <div class="row">
        <NameField label="App name" name="app-name" value={name} onInput={setName} />
        <button type="submit" disabled={!renamed || action.busy}>
          {action.busy ? 'Saving…' : 'Rename app'}
        </button>
        <button type="button" class="secondary danger" onClick={() => setDeleting(true)}>
          Delete app…
        </button>
      </div>
      <ErrorNote error={action.error} />
      <p class="muted small" role="status" aria-live="polite">
        {saved && 'Renamed.'}
      </p>
      {deleting && (
        <Confirm
          title={`Delete “${props.app.name}”?`}
          confirmLabel="Delete app"
          write={() => api.delete(props.path)}
          onDone={() => navigate(orgView(props.orgId, 'apps'))}
          onCancel={() => setDeleting(false)}
        >
          <p>
            Its {connections} active connection{connections === 1 ? '' : 's'} are revoked and its{' '}
            {keys} working API key{keys === 1 ? '' : 's'} stop at once, on every gateway instance;
            its OAuth clients are deleted. Its usage, product users and audit entries keep naming
            it. A deleted app cannot be restored.
          </p>
        </Confirm>
      )}
    </form>
  );
}

function Connections(props: { orgId: string; appId: string; manage: boolean }) {
  const list = usePaged<ConnectionRow>(
    `/dashboard/api/apps/${encodeURIComponent(props.appId)}/connections`,
  );
  const { manage } = props;
  return (
    <>
      {manage && <CreateConnection appId={props.appId} onCreated={list.reload} />}
      <section aria-labelledby="connections-heading">
        <h2 id="connections-heading">Connections</h2>
        <ListState
          list={list}
          rows={list.data}
          what="connections"
          empty={`No connections yet. ${manage ? 'Create one above.' : 'An admin can create one.'}`}
        />
        <ul class="cards">
          {list.data?.map((connection) => (
            <ConnectionCard
              key={`${connection.id}-${connection.updated_at}`}
              orgId={props.orgId}
              connection={connection}
              manage={manage}
              onChanged={list.reload}
            />
          ))}
        </ul>
        <MoreButton list={list} what="connections" />
      </section>
    </>
  );
}

function CreateConnection({ appId, onCreated }: { appId: string; onCreated(): void }) {
  const [name, setName] = useState('');
  const [settings, setSettings] = useState<ConnectionSettings>(defaultSettings);
  const action = useAction();
  return (
    <form
      class="card"
      aria-labelledby="create-connection-heading"
      onSubmit={action.submit(
        () =>
          api.create(`/dashboard/api/apps/${encodeURIComponent(appId)}/connections`, {
            name,
            ...settings,
          }),
        () => {
          setName('');
          setSettings(defaultSettings);
          onCreated();
        },
      )}
    >
      <h2 id="create-connection-heading">Create a connection</h2>
      <NameField label="Connection name" name="connection-name" value={name} onInput={setName} />
      <SettingsFields idPrefix="new" value={settings} onChange={setSettings} />
      <ErrorNote error={action.error} />
      <button type="submit" disabled={action.busy}>
        {action.busy ? 'Creating…' : 'Create connection'}
      </button>
    </form>
  );
}

const settingsOf = (connection: ConnectionRow): ConnectionSettings => ({
  credit_mode: connection.credit_mode,
  overrun_policy: connection.overrun_policy,
  requires_product_user: connection.requires_product_user,
});

function ConnectionCard(props: {
  orgId: string;
  connection: ConnectionRow;
  manage: boolean;
  onChanged(): void;
}) {
  const { connection, manage } = props;
  // each field follows the loaded connection until edited; a save writes the edited ones only
  const loaded = settingsOf(connection);
  const creditMode = useEditedField(loaded.credit_mode);
  const overrun = useEditedField(loaded.overrun_policy);
  const requiresUser = useEditedField(loaded.requires_product_user);
  const settings: ConnectionSettings = {
    credit_mode: creditMode.value,
    overrun_policy: overrun.value,
    requires_product_user: requiresUser.value,
  };
  const setSettings = (next: ConnectionSettings) => {
    creditMode.set(next.credit_mode);
    overrun.set(next.overrun_policy);
    requiresUser.set(next.requires_product_user);
  };
  const name = useEditedField(connection.name);
  const [confirming, setConfirming] = useState(false);
  const save = useAction();
  const active = connection.status === 'active';
  const renamed = name.changed && name.value.trim() !== connection.name;
  const changes = {
    ...(renamed && { name: name.value.trim() }),
    ...(creditMode.changed && { credit_mode: creditMode.value }),
    ...(overrun.changed && { overrun_policy: overrun.value }),
    ...(requiresUser.changed && { requires_product_user: requiresUser.value }),
  };
  const changed = Object.keys(changes).length > 0;
  const path = `/dashboard/api/connections/${encodeURIComponent(connection.id)}`;
  return (
    <li class="card connection" aria-labelledby={`conn-${connection.id}`}>
      <div class="connection-head">
        <h3 id={`conn-${connection.id}`}>{connection.name}</h3>
        <Status value={connection.status} />
      </div>
      <p class="muted small">
        <Id value={connection.id} /> · created {formatTime(connection.created_at)} ·{' '}
        <Link to={orgView(props.orgId, 'keys', connection.id)}>
          API keys<span class="visually-hidden"> of {connection.name}</span>
        </Link>
      </p>
      <form
        aria-label={`Settings of ${connection.name}`}
        onSubmit={save.submit(() => api.patch(path, changes), props.onChanged)}
      >
        {manage && active && (
          <NameField label="Name" class="name-field" value={name.value} onInput={name.set} />
        )}
        <SettingsFields
          idPrefix={connection.id}
          value={settings}
          disabled={!manage || !active}
          onChange={setSettings}
        />
        <ErrorNote error={save.error} />
        {manage && active && (
          <div class="actions">
            <button type="submit" disabled={!changed || save.busy}>
              {save.busy ? 'Saving…' : 'Save settings'}
            </button>
            <button type="button" class="secondary danger" onClick={() => setConfirming(true)}>
              Revoke…
            </button>
          </div>
        )}
      </form>
      {confirming && (
        <Confirm
          title={`Revoke “${connection.name}”?`}
          confirmLabel="Revoke connection"
          write={() => api.delete(path)}
          onDone={() => {
            setConfirming(false);
            props.onChanged();
          }}
          onCancel={() => setConfirming(false)}
        >
          <p>
            Every API key of this connection stops working at once, on every gateway instance. A
            revoked connection cannot be reactivated.
          </p>
        </Confirm>
      )}
    </li>
  );
}
