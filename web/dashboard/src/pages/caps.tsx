// Caps: the organization's monthly spending cap, each connection's cap with its per-user
// default and settings (credit mode, overrun policy), and one product user's cap with its
// overrides. Every instance applies a change to its next request.
import { useEffect, useState } from 'preact/hooks';
import { api, canManage, type OrgSummary, type Page } from '../api.js';
import { ConnectionSelect } from '../connection-picker.js';
import { invalidInput, useAction, useEditedField, useLoad } from '../hooks.js';
import { amountProblem, compareDecimals, plainAmount } from '../money.js';
import { userLabel } from '../org-data.js';
import type { CapSetAnswer, CapState, ProductUserSummary } from '../types.js';
import { Confirm, Empty, ErrorNote, formatTime, Loading, Money, PageHeader } from '../ui.js';
import {
  creditModes,
  overrunPolicies,
  type CreditMode,
  type OverrunPolicy,
} from './connection-settings.js';
import { CAP_CURRENCY, ClearCap, ConnectionCap } from './connection-cap.js';
import type { OrgPage } from './page.js';
import { PolicyWarnings } from './policy-warnings.js';
import { ChoiceField } from './settings-fields.js';

export const capsPage: OrgPage = {
  section: 'caps',
  label: 'Caps',
  Component: ({ org }) => <CapsPage org={org} />,
};

function CapsPage({ org }: { org: OrgSummary }) {
  const manage = canManage(org.role);
  return (
    <>
      <PageHeader title="Caps">
        Monthly spending caps (calendar month, UTC) for the organization, each connection and each
        product user. A request that would pass a cap is refused with 403.
      </PageHeader>
      <OrgCap org={org} manage={manage} />
      <ConnectionCaps org={org} manage={manage} />
      <ProductUserCap org={org} manage={manage} />
    </>
  );
}

/** A cap's amount field: the cap in force (10.00), until the user types another. */
function useCurrentAmount(state: CapState | null): [string, (amount: string) => void] {
  const current = state?.cap?.amount ?? null;
  const [amount, setAmount] = useState(current ? plainAmount(current) : '');
  useEffect(() => {
    setAmount(current ? plainAmount(current) : '');
  }, [current]);
  return [amount, setAmount];
}

function CapSummary({ state, what }: { state: CapState; what: string }) {
  const cap = state.cap;
  // A product user without a cap of their own may be capped by their connection's per-user
  // default: "no cap" would read as "not capped" (decision 587).
  const byDefault =
    state.effective?.source === 'app_connection_per_user_default' ? state.effective : null;
  if ((!cap || cap.amount === null) && byDefault) {
    return (
      <p>
        {what} has no cap of their own: their connection’s per-user default caps them at{' '}
        <Money value={byDefault.amount} currency={byDefault.currency} /> a month.
      </p>
    );
  }
  if (!cap || cap.amount === null) return <Empty>{what} has no cap.</Empty>;
  return (
    <p>
      Cap: <Money value={cap.amount} currency={cap.currency} /> a month{' '}
      <span class="muted small">(changed {formatTime(cap.updated_at)})</span>
    </p>
  );
}

/**
 * A cap saved at or below what its level spent this period (decision 481): the API's warning
 * that every request under it is refused, where it was saved.
 */
function UsedUpCap({ warnings }: { warnings: readonly string[] }) {
  return (
    <PolicyWarnings warnings={warnings} done="Saved">
      Raise the cap (or remove it) to let requests through again.
    </PolicyWarnings>
  );
}

function OrgCap({ org, manage }: { org: OrgSummary; manage: boolean }) {
  const path = `/dashboard/api/orgs/${encodeURIComponent(org.id)}/cap`;
  const state = useLoad<CapState>(path);
  const [amount, setAmount] = useCurrentAmount(state.data);
  const [clearing, setClearing] = useState(false);
  const [stoppingAll, setStoppingAll] = useState(false);
  const action = useAction();
  const [warnings, setWarnings] = useState<readonly string[]>([]);
  const saved = (answer?: CapSetAnswer) => {
    setWarnings(answer?.warnings ?? []);
    state.reload();
  };
  return (
    <section class="card" aria-labelledby="org-cap-heading">
      <h2 id="org-cap-heading">Organization cap</h2>
      <ErrorNote error={state.error} />
      {state.loading && <Loading what="the organization cap" />}
      {state.data && <CapSummary state={state.data} what="The organization" />}
      {manage && state.data && (
        <form
          onInput={() => {
            action.clear();
            setWarnings([]);
          }}
          onSubmit={(event) => {
            event.preventDefault();
            const problem = amountProblem(amount, { zero: true });
            if (problem) action.refuse(problem);
            // a cap of 0 refuses every request: that asks first
            else if (compareDecimals(amount.trim(), '0') === 0) setStoppingAll(true);
            else {
              action.submit(
                () => api.put<CapSetAnswer>(path, { amount: amount.trim() }),
                saved,
              )(event);
            }
          }}
        >
          <div class="row">
            <label>
              Monthly cap ({CAP_CURRENCY})
              <input
                name="org-cap-amount"
                inputMode="decimal"
                required
                value={amount}
                onInput={(event) => setAmount(event.currentTarget.value)}
              />
            </label>
            <button type="submit" disabled={action.busy}>
              {action.busy ? 'Saving…' : 'Set organization cap'}
            </button>
            {state.data.cap && (
              <button type="button" class="secondary danger" onClick={() => setClearing(true)}>
                Remove cap…
              </button>
            )}
          </div>
          <ErrorNote error={action.error} />
          <UsedUpCap warnings={warnings} />
        </form>
      )}
      {stoppingAll && (
        <Confirm
          title="Set the organization cap to 0?"
          confirmLabel="Stop all requests"
          write={() => api.put(path, { amount: amount.trim() })}
          onDone={() => {
            setStoppingAll(false);
            saved();
          }}
          onCancel={() => setStoppingAll(false)}
        >
          <p>
            Every request of every app and connection of {org.name} that costs anything is refused
            with 403 until the cap is raised or removed, on every gateway instance at once.
          </p>
        </Confirm>
      )}
      {clearing && (
        <ClearCap
          path={path}
          title="Remove the organization cap?"
          what="Requests of every app and connection of this organization are no longer limited by an organization-wide monthly total."
          onClose={() => setClearing(false)}
          onCleared={() => {
            setClearing(false);
            state.reload();
          }}
        />
      )}
    </section>
  );
}

function ConnectionCaps({ org, manage }: { org: OrgSummary; manage: boolean }) {
  const [chosen, setChosen] = useState('');
  return (
    <section class="card" aria-labelledby="connection-caps-heading">
      <h2 id="connection-caps-heading">Connection caps</h2>
      <p class="muted">
        A connection’s cap limits all its requests; its per-user default caps each of its product
        users who has no cap of their own.
      </p>
      <ConnectionSelect
        orgId={org.id}
        id="cap-connection"
        name="cap-connection"
        label="Connection"
        status="active"
        value={chosen}
        current={null}
        onChange={setChosen}
        none={<Empty>No active connections. Create one under Apps.</Empty>}
      />
      {chosen && <ConnectionCap key={chosen} connectionId={chosen} manage={manage} />}
    </section>
  );
}

/**
 * One product user's cap: the user found as on the Product users page (external id or name,
 * from its start), or by their id (pu_…, shown on their page).
 */
function ProductUserCap({ org, manage }: { org: OrgSummary; manage: boolean }) {
  const [typed, setTyped] = useState('');
  const [query, setQuery] = useState('');
  const [userId, setUserId] = useState<string | null>(null);
  const byId = /^pu_\S+$/.test(query);
  const found = useLoad<Page<ProductUserSummary>>(
    query && !byId
      ? `/dashboard/api/orgs/${encodeURIComponent(org.id)}/product-users?q=${encodeURIComponent(query)}&limit=10`
      : null,
  );
  const chosen = byId ? query : userId;
  return (
    <section class="card" aria-labelledby="user-cap-heading">
      <h2 id="user-cap-heading">One product user’s cap</h2>
      <form
        class="row"
        role="search"
        onSubmit={(event) => {
          event.preventDefault();
          setUserId(null);
          setQuery(typed.trim());
        }}
      >
        <label class="grow">
          Product user: external id or name (from its start), or id (pu_…)
          <input
            name="cap-product-user"
            required
            value={typed}
            onInput={(event) => setTyped(event.currentTarget.value)}
          />
        </label>
        <button type="submit" class="secondary">
          Find
        </button>
      </form>
      {!byId && query && (
        <>
          <ErrorNote error={found.error} />
          {found.loading && <Loading what="product users" />}
          {found.data?.data.length === 0 && (
            <Empty>No product user’s external id or name starts with “{query}”.</Empty>
          )}
          {found.data && found.data.data.length > 0 && (
            <ul class="choices" aria-label="Matching product users">
              {found.data.data.map((user) => (
                <li key={user.product_end_user_id}>
                  <button
                    type="button"
                    class="secondary"
                    aria-pressed={user.product_end_user_id === userId}
                    onClick={() => setUserId(user.product_end_user_id)}
                  >
                    {userLabel(user)}
                  </button>{' '}
                  <code class="small">{user.product_end_user_id}</code>
                </li>
              ))}
            </ul>
          )}
        </>
      )}
      {chosen && <UserCap key={chosen} userId={chosen} manage={manage} />}
    </section>
  );
}

function UserCap({ userId, manage }: { userId: string; manage: boolean }) {
  const path = `/dashboard/api/product-users/${encodeURIComponent(userId)}/cap`;
  const state = useLoad<CapState>(path);
  const stored = state.data?.cap ?? null;
  // each field follows the loaded cap until edited (its own settings shown, '' inheriting the
  // connection's); a save of a cap in force writes the edited ones only
  const amount = useEditedField(stored?.amount ? plainAmount(stored.amount) : '');
  const creditMode = useEditedField<CreditMode | ''>(stored?.credit_mode ?? '');
  const overrun = useEditedField<OverrunPolicy | ''>(stored?.overrun_policy ?? '');
  const [clearing, setClearing] = useState(false);
  const action = useAction();
  const [warnings, setWarnings] = useState<readonly string[]>([]);
  if (state.loading) return <Loading what="the product user’s cap" />;
  if (!state.data) return <ErrorNote error={state.error} />;
  const cap = state.data.cap;
  return (
    <div>
      <CapSummary state={state.data} what="This product user" />
      {cap && (
        <p class="muted small">
          Credit mode: {cap.credit_mode ?? 'as the connection'} · overrun policy:{' '}
          {cap.overrun_policy ?? 'as the connection'}
        </p>
      )}
      {manage && (
        <form
          onInput={() => {
            action.clear();
            setWarnings([]);
          }}
          onSubmit={action.submit(
            () => {
              const problem = amountProblem(amount.value, { zero: true });
              if (problem) throw invalidInput(problem);
              const changes = {
                ...((amount.changed || !cap) && { amount: amount.value.trim() }),
                ...(creditMode.changed && {
                  credit_mode: creditMode.value === '' ? null : creditMode.value,
                }),
                ...(overrun.changed && {
                  overrun_policy: overrun.value === '' ? null : overrun.value,
                }),
              };
              return Object.keys(changes).length === 0
                ? Promise.resolve(null)
                : api.put<CapSetAnswer>(path, changes);
            },
            (answer) => {
              setWarnings(answer?.warnings ?? []);
              state.reload();
            },
          )}
        >
          {/* top: the choices' hints hang below their selects, which stay level with the amount */}
          <div class="row top">
            <label>
              Monthly cap ({CAP_CURRENCY})
              <input
                name="user-cap-amount"
                inputMode="decimal"
                required
                value={amount.value}
                onInput={(event) => amount.set(event.currentTarget.value)}
              />
            </label>
            <ChoiceField<CreditMode | ''>
              id="user-credit-mode"
              label="Credit mode"
              choices={creditModes}
              inherit="As the connection"
              value={creditMode.value}
              onChange={creditMode.set}
            />
            <ChoiceField<OverrunPolicy | ''>
              id="user-overrun-policy"
              label="Overrun policy"
              choices={overrunPolicies}
              inherit="As the connection"
              value={overrun.value}
              onChange={overrun.set}
            />
          </div>
          <ErrorNote error={action.error} />
          <UsedUpCap warnings={warnings} />
          <div class="actions">
            <button type="submit" disabled={action.busy}>
              {action.busy ? 'Saving…' : 'Set product user cap'}
            </button>
            {cap && (
              <button type="button" class="secondary danger" onClick={() => setClearing(true)}>
                Remove cap…
              </button>
            )}
          </div>
        </form>
      )}
      {clearing && (
        <ClearCap
          path={path}
          title="Remove this product user’s cap?"
          what="The user falls back to the connection’s per-user default (if any) and its settings."
          onClose={() => setClearing(false)}
          onCleared={() => {
            setClearing(false);
            state.reload();
          }}
        />
      )}
    </div>
  );
}
