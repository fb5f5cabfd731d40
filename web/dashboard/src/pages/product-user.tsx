// One product user's profile: allowance and cap this period, credits, usage; block and
// unblock; their credit grants, granting and revoking.
import { useState } from 'preact/hooks';
import { api, canManage, type OrgSummary } from '../api.js';
import { type Paged, useAction, useLoad, usePaged } from '../hooks.js';
import { money } from '../money.js';
import { orgView } from '../router.js';
import { shownText } from '../shown-text.js';
import type { AppRow, CreditGrant, Credits, ProductUserProfile, UsageTotals } from '../types.js';
import {
  Confirm,
  CopyText,
  ErrorNote,
  Fact,
  Facts,
  formatTime,
  Id,
  IdText,
  Link,
  ListTable,
  Loading,
  PageHeader,
  RowButton,
  Status,
} from '../ui.js';
import { GrantCredits } from './grant-credits.js';

export function ProductUserProfilePage({ org, userId }: { org: OrgSummary; userId: string }) {
  const path = `/dashboard/api/product-users/${encodeURIComponent(userId)}`;
  const profile = useLoad<ProductUserProfile>(path);
  const grants = usePaged<CreditGrant>(`${path}/credit-grants?limit=200`);
  const manage = canManage(org.role);
  const user = profile.data;
  const app = useLoad<AppRow>(
    user ? `/dashboard/api/apps/${encodeURIComponent(user.app_id)}` : null,
  );
  // usage is charged in the organization's currency: the cap's, or the credits' by default
  const currency = user ? (user.allowance?.currency ?? user.credits.currency) : '';
  const refresh = () => {
    profile.reload();
    grants.reload();
  };
  return (
    <>
      <p class="crumbs">
        <Link to={orgView(org.id, 'users')}>Product users</Link> <span aria-hidden="true">›</span>
      </p>
      <PageHeader
        title={
          user
            ? shownText(user.display_name) || <IdText value={user.external_user_id} />
            : 'Product user'
        }
      >
        {user ? (
          <>
            External id <Id value={user.external_user_id} /> in app{' '}
            <Link to={orgView(org.id, 'apps', user.app_id)}>{app.data?.name ?? user.app_id}</Link> ·{' '}
            <Status value={user.status} />
            <br />
            Product user id{' '}
            <CopyText value={user.product_end_user_id} label="the product user id" />
          </>
        ) : (
          <Id value={userId} />
        )}
      </PageHeader>
      <ErrorNote error={profile.error} />
      {profile.loading && !user && <Loading what="the profile" />}
      {user && (
        <>
          {manage && <BlockControl path={path} user={user} onChanged={profile.reload} />}
          <div class="grid profile">
            <AllowanceCard user={user} />
            <CreditsCard credits={user.credits} />
            <UsageCard
              title="Usage this month"
              totals={user.usage.this_month}
              currency={currency}
            />
            <UsageCard title="Usage in total" totals={user.usage.total} currency={currency} />
          </div>
          {manage && (
            <GrantCredits
              path={path}
              user={user}
              appName={app.data?.name ?? null}
              currency={currency}
              onGranted={refresh}
            />
          )}
        </>
      )}
      <section aria-labelledby="grants-heading">
        <h2 id="grants-heading">Credit grants</h2>
        <GrantList grants={grants} manage={manage} onRevoked={refresh} />
      </section>
    </>
  );
}

function AllowanceCard({ user }: { user: ProductUserProfile }) {
  const allowance = user.allowance;
  return (
    <section class="card" aria-labelledby="allowance-heading">
      <h2 id="allowance-heading">Allowance this month</h2>
      {allowance ? (
        <Facts>
          <Fact term="Cap">{money(allowance.cap_amount, allowance.currency)}</Fact>
          <Fact term="Spent this period">
            {money(allowance.spent_this_period, allowance.currency)}
          </Fact>
          <Fact term="Left of the cap">
            {money(allowance.remaining_base_allowance, allowance.currency)}
          </Fact>
          <Fact term="Plus credits">{money(allowance.available_credits, allowance.currency)}</Fact>
          <Fact term="Available in all">
            <strong>{money(allowance.available_allowance, allowance.currency)}</strong>
          </Fact>
          <Fact term="Resets">{formatTime(allowance.period_end)}</Fact>
          <Fact term="Credit mode">
            <code>{allowance.credit_mode}</code>, overrun <code>{allowance.overrun_policy}</code>
          </Fact>
        </Facts>
      ) : user.last_app_connection_id === '' ? (
        // no request through a connection yet: which connection's per-user default will apply
        // is not known until then
        <p class="muted">
          No cap of their own. Their first request through a connection shows here what applies:
          that connection’s per-user default cap, if it has one.
        </p>
      ) : (
        <p class="muted">
          No cap applies to this user (none of their own, and their connection has no per-user
          default): only the organization’s caps and wallet limit their requests.
        </p>
      )}
    </section>
  );
}

function CreditsCard({ credits }: { credits: Credits }) {
  const { currency } = credits;
  return (
    <section class="card" aria-labelledby="credits-heading">
      <h2 id="credits-heading">Credits</h2>
      <Facts>
        <Fact term="Available">
          <strong>{money(credits.available_credits, currency)}</strong>
        </Fact>
        <Fact term="Active grants">{credits.active_grant_count}</Fact>
        <Fact term="Expiring within 7 days">{money(credits.expiring_soon_amount, currency)}</Fact>
        <Fact term="Spent this month">{money(credits.spent_this_month, currency)}</Fact>
        <Fact term="Spent in total">{money(credits.spent_total, currency)}</Fact>
        <Fact term="Last used">
          {credits.last_used_at ? formatTime(credits.last_used_at) : 'never'}
        </Fact>
      </Facts>
    </section>
  );
}

function UsageCard(props: { title: string; totals: UsageTotals; currency: string }) {
  const { title, totals } = props;
  const id = `usage-${title.replace(/\W+/g, '-').toLowerCase()}`;
  return (
    <section class="card" aria-labelledby={id}>
      <h2 id={id}>{title}</h2>
      <Facts>
        <Fact term="Requests">{totals.request_count.toLocaleString()}</Fact>
        <Fact term="Tokens in / out">
          {totals.input_tokens.toLocaleString()} / {totals.output_tokens.toLocaleString()}
        </Fact>
        <Fact term="Cost">{money(totals.sell_cost, props.currency)}</Fact>
      </Facts>
    </section>
  );
}

function BlockControl(props: { path: string; user: ProductUserProfile; onChanged(): void }) {
  const [confirming, setConfirming] = useState(false);
  const action = useAction();
  const blocked = props.user.status === 'blocked';
  const unblock = () =>
    void action
      .run(() => api.post(`${props.path}/unblock`))
      .then((done) => {
        if (done) props.onChanged();
      });
  return (
    <div class="card status-bar">
      {blocked ? (
        <p>
          <strong>Blocked.</strong> Every request naming this user is refused (403{' '}
          <code>gw_product_user_blocked</code>).
        </p>
      ) : (
        <p>Active: their requests are served within their allowance.</p>
      )}
      {blocked ? (
        <button type="button" disabled={action.busy} onClick={unblock}>
          {action.busy ? 'Unblocking…' : 'Unblock'}
        </button>
      ) : (
        <button type="button" class="danger secondary" onClick={() => setConfirming(true)}>
          Block…
        </button>
      )}
      <ErrorNote error={action.error} />
      {confirming && (
        <Confirm
          title={
            <>
              Block <IdText value={props.user.external_user_id} />?
            </>
          }
          confirmLabel="Block user"
          write={() => api.post(`${props.path}/block`)}
          onDone={() => {
            setConfirming(false);
            props.onChanged();
          }}
          onCancel={() => setConfirming(false)}
        >
          <p>
            Every gateway instance refuses their requests at once with 403, whatever their allowance
            or credits. Their credits and history stay; you can unblock them later.
          </p>
        </Confirm>
      )}
    </div>
  );
}

function GrantList(props: { grants: Paged<CreditGrant>; manage: boolean; onRevoked(): void }) {
  const [revoking, setRevoking] = useState<CreditGrant | null>(null);
  const grants = props.grants;
  return (
    <>
      <ListTable
        list={grants}
        rows={grants.data ? [...grants.data].reverse() : null}
        what="grants"
        empty="No credits granted yet."
        rowKey={(grant) => `${grant.grant_id}-${grant.status}`}
        columns={[
          {
            header: 'Amount',
            numeric: true,
            cell: (grant) => money(grant.amount, grant.currency),
          },
          { header: 'Status', cell: (grant) => <Status value={grant.status} /> },
          {
            header: 'Expires',
            class: 'nowrap',
            cell: (grant) => (grant.expires_at ? formatTime(grant.expires_at) : 'never'),
          },
          {
            header: 'Reason',
            // a service key's grant gives the app's own reason, as sent
            cell: (grant) =>
              grant.reason === null ? <span class="muted">—</span> : shownText(grant.reason),
          },
          { header: 'Granted', class: 'nowrap', cell: (grant) => formatTime(grant.created_at) },
        ]}
        actions={(grant) =>
          props.manage &&
          grant.status === 'active' && (
            <RowButton
              label="Revoke…"
              name={`Revoke the grant of ${money(grant.amount, grant.currency)}`}
              danger
              onClick={() => setRevoking(grant)}
            />
          )
        }
      />
      {revoking && (
        <Confirm
          title={`Revoke the grant of ${money(revoking.amount, revoking.currency)}?`}
          confirmLabel="Revoke grant"
          write={() =>
            api.post(`/dashboard/api/credit-grants/${encodeURIComponent(revoking.grant_id)}/revoke`)
          }
          onDone={() => {
            setRevoking(null);
            props.onRevoked();
          }}
          onCancel={() => setRevoking(null)}
        >
          <p>
            What is left of this grant is taken out of the user’s credits at once; what they already
            spent stays spent. A revoked grant cannot be restored (grant again instead).
          </p>
        </Confirm>
      )}
    </>
  );
}
