// Apps of the organization: the list, and creating one (admins and owners).
import { useState } from 'preact/hooks';
import { api, canManage, type OrgSummary } from '../api.js';
import { useAction, usePaged } from '../hooks.js';
import { orgView } from '../router.js';
import type { AppRow } from '../types.js';
import { ErrorNote, formatTime, Link, ListTable, NameField, PageHeader } from '../ui.js';
import { AppPage } from './app.js';
import type { OrgPage } from './page.js';

export const appsPage: OrgPage = {
  section: 'apps',
  label: 'Apps & connections',
  Component: ({ org, id }) => (id ? <AppPage org={org} appId={id} /> : <AppsPage org={org} />),
};

function AppsPage({ org }: { org: OrgSummary }) {
  const list = usePaged<AppRow>(`/dashboard/api/orgs/${encodeURIComponent(org.id)}/apps`);
  return (
    <>
      <PageHeader title="Apps">
        An app is one product of yours; its connections hold the settings its API keys use.
      </PageHeader>
      {canManage(org.role) && <CreateApp orgId={org.id} onCreated={list.reload} />}
      <section aria-labelledby="apps-heading">
        <h2 id="apps-heading">All apps</h2>
        <ListTable
          list={list}
          rows={list.data}
          what="apps"
          empty={`No apps yet. ${canManage(org.role) ? 'Create the first one above.' : 'An admin can create one.'}`}
          rowKey={(app) => app.id}
          columns={[
            {
              header: 'Name',
              class: 'breakable name',
              cell: (app) => <Link to={orgView(org.id, 'apps', app.id)}>{app.name}</Link>,
            },
            { header: 'Id', cell: (app) => <code>{app.id}</code> },
            { header: 'Created', cell: (app) => formatTime(app.created_at) },
          ]}
        />
      </section>
    </>
  );
}

function CreateApp({ orgId, onCreated }: { orgId: string; onCreated(): void }) {
  const [name, setName] = useState('');
  const action = useAction();
  return (
    <form
      class="card inline-form"
      aria-labelledby="create-app-heading"
      onSubmit={action.submit(
        () => api.create(`/dashboard/api/orgs/${encodeURIComponent(orgId)}/apps`, { name }),
        () => {
          setName('');
          onCreated();
        },
      )}
    >
      <h2 id="create-app-heading">Create an app</h2>
      <div class="row">
        <NameField label="App name" name="app-name" value={name} onInput={setName} />
        <button type="submit" disabled={action.busy}>
          {action.busy ? 'Creating…' : 'Create app'}
        </button>
      </div>
      <ErrorNote error={action.error} />
    </form>
  );
}
