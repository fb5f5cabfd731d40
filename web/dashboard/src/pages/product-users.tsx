// Product users: the people using your apps through gw. Search by external id or name; a
// profile (/orgs/<org>/users/<id>) shows their allowance, cap, credits and usage.
import { useState } from 'preact/hooks';
import type { OrgSummary } from '../api.js';
import { useLookup, usePaged } from '../hooks.js';
import { orgView } from '../router.js';
import { shownText } from '../shown-text.js';
import type { AppRow, ProductUserSummary } from '../types.js';
import { formatTime, Link, ListTable, PageHeader, Status } from '../ui.js';
import type { OrgPage } from './page.js';
import { ProductUserProfilePage } from './product-user.js';

export const productUsersPage: OrgPage = {
  section: 'users',
  label: 'Product users',
  Component: ({ org, id }) =>
    id ? <ProductUserProfilePage org={org} userId={id} /> : <ProductUsersPage org={org} />,
};

function ProductUsersPage({ org }: { org: OrgSummary }) {
  const [typed, setTyped] = useState('');
  const [query, setQuery] = useState('');
  const base = `/dashboard/api/orgs/${encodeURIComponent(org.id)}/product-users`;
  const list = usePaged<ProductUserSummary>(
    query ? `${base}?q=${encodeURIComponent(query)}` : base,
  );
  // the list names each user's app by id: the name of each app it shows
  const apps = useLookup<AppRow>(
    (list.data ?? []).map((user) => user.app_id),
    (appId) => `/dashboard/api/apps/${encodeURIComponent(appId)}`,
  );
  return (
    <>
      <PageHeader title="Product users">
        The people using your apps, as your apps name them (external id). Open one to see their
        allowance, credits and usage, to grant credits or to block them.
      </PageHeader>
      <form
        class="row search-form"
        role="search"
        onSubmit={(event) => {
          event.preventDefault();
          setQuery(typed.trim());
        }}
      >
        <label>
          Search product users
          <input
            type="search"
            name="q"
            placeholder="External id or name, from its start"
            value={typed}
            onInput={(event) => setTyped(event.currentTarget.value)}
          />
        </label>
        <button type="submit">Search</button>
        {query && (
          <button
            type="button"
            class="secondary"
            onClick={() => {
              setTyped('');
              setQuery('');
            }}
          >
            Show all
          </button>
        )}
      </form>
      <ListTable
        list={list}
        rows={list.data}
        what="product users"
        empty={
          query
            ? `No product user’s external id or name starts with “${query}”.`
            : 'No product users yet. They appear with the first request that names one (the x-gw-external-user-id header or the user field).'
        }
        rowKey={(user) => user.product_end_user_id}
        columns={[
          {
            header: 'External id',
            class: 'breakable name',
            cell: (user) => (
              <Link to={orgView(org.id, 'users', user.product_end_user_id)}>
                {shownText(user.external_user_id)}
              </Link>
            ),
          },
          { header: 'Name', class: 'breakable name', cell: (user) => shownText(user.display_name) },
          { header: 'Status', cell: (user) => <Status value={user.status} /> },
          {
            header: 'App',
            class: 'breakable name',
            cell: (user) => apps.get(user.app_id)?.name ?? <code>{user.app_id}</code>,
          },
          { header: 'First seen', class: 'nowrap', cell: (user) => formatTime(user.created_at) },
        ]}
      />
    </>
  );
}
