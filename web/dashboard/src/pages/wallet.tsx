// Wallet: the organization's live balance (what requests in flight hold, what is available),
// its top-ups and balance sets, a top-up where the operator allows it, and the low-balance
// alert (the wallet.low_balance webhook).
import { useState } from 'preact/hooks';
import { api, canManage, type OrgSummary } from '../api.js';
import { useAction, useLoad, useLookup, useNotice, usePaged } from '../hooks.js';
import type { MemberRow, Wallet, WalletAlert, WalletTransaction } from '../types.js';
import {
  Confirm,
  ErrorNote,
  formatTime,
  ListTable,
  Loading,
  Money,
  PageHeader,
  StatFigure,
} from '../ui.js';
import { amountProblem, money } from '../money.js';
import type { OrgPage } from './page.js';

export const walletPage: OrgPage = {
  section: 'wallet',
  label: 'Wallet',
  Component: ({ org }) => <WalletPage org={org} />,
};

const KINDS: Readonly<Record<WalletTransaction['kind'], string>> = {
  topup: 'Top-up',
  set: 'Balance set',
  usage_archived: 'Archived usage',
};

function WalletPage({ org }: { org: OrgSummary }) {
  const base = `/dashboard/api/orgs/${encodeURIComponent(org.id)}`;
  const wallet = useLoad<Wallet>(`${base}/wallet`);
  const history = usePaged<WalletTransaction>(`${base}/wallet/transactions?limit=200`);
  const manage = canManage(org.role);
  const rows = history.data ? [...history.data].reverse() : null; // newest first
  // the history names who made a change by user id: the e-mail of each member it shows
  const members = useLookup<MemberRow>(
    (rows ?? []).flatMap((row) =>
      row.created_by !== null && row.created_by !== 'cli' ? [row.created_by] : [],
    ),
    (userId) => `${base}/members/${encodeURIComponent(userId)}`,
  );
  const by = (createdBy: string | null) =>
    createdBy === null ? (
      <span class="muted">—</span>
    ) : createdBy === 'cli' ? (
      <>the operator (CLI)</>
    ) : (
      <>{members.get(createdBy)?.email ?? <code>{createdBy}</code>}</>
    );
  return (
    <>
      <PageHeader title="Wallet">
        What the organization’s requests are paid from. Requests a provider credential of your own
        serves cost the wallet nothing.
      </PageHeader>
      <ErrorNote error={wallet.error} />
      {wallet.loading && <Loading what="the wallet" />}
      {wallet.data && (
        <div class="stats">
          <div class="stat card">
            <StatFigure money>
              <Money value={wallet.data.available} currency={wallet.data.currency} />
            </StatFigure>
            <span class="stat-label">Available</span>
          </div>
          <div class="stat card">
            <StatFigure money>
              <Money value={wallet.data.balance} currency={wallet.data.currency} />
            </StatFigure>
            <span class="stat-label">Balance</span>
          </div>
          <div class="stat card">
            <StatFigure money>
              <Money value={wallet.data.reserved} currency={wallet.data.currency} />
            </StatFigure>
            <span class="stat-label">Held by requests in flight</span>
          </div>
        </div>
      )}
      {manage && wallet.data && !wallet.data.top_ups_enabled && (
        <p class="muted">
          This gateway takes no top-ups from the dashboard. Its operator adds funds with{' '}
          <code>gw wallet topup</code> (or turns dashboard top-ups on with{' '}
          <code>DASHBOARD_WALLET_TOPUP</code>).
        </p>
      )}
      {manage && wallet.data?.top_ups_enabled && (
        <TopUp
          base={base}
          currency={wallet.data.currency}
          onDone={() => {
            wallet.reload();
            history.reload();
          }}
        />
      )}
      <LowBalanceAlert base={base} manage={manage} />
      <section aria-labelledby="wallet-history-heading">
        <h2 id="wallet-history-heading">Top-ups and balance changes</h2>
        <ListTable
          list={history}
          rows={rows}
          what="entries"
          empty="No top-ups yet."
          rowKey={(row) => row.id}
          columns={[
            { header: 'When', class: 'nowrap', cell: (row) => formatTime(row.created_at) },
            { header: 'What', cell: (row) => KINDS[row.kind] },
            {
              header: 'Change to the balance',
              numeric: true,
              class: 'nowrap',
              cell: (row) => (
                <>
                  {row.amount.startsWith('-') ? '−' : '+'}
                  <Money value={row.amount.replace(/^-/, '')} currency={row.currency} />
                </>
              ),
            },
            { header: 'By', class: 'small', cell: (row) => by(row.created_by) },
          ]}
        />
      </section>
    </>
  );
}

function TopUp(props: { base: string; currency: string; onDone(): void }) {
  const [amount, setAmount] = useState('');
  const [confirming, setConfirming] = useState(false);
  const [done, setDone] = useNotice<string>();
  const action = useAction();
  return (
    <form
      class="card"
      aria-labelledby="top-up-heading"
      onInput={() => action.clear()}
      onSubmit={(event) => {
        event.preventDefault();
        setDone(null);
        const problem = amountProblem(amount);
        if (problem) {
          action.refuse(problem);
          return;
        }
        action.clear();
        setConfirming(true);
      }}
    >
      <h2 id="top-up-heading">Top up</h2>
      <p class="muted small">
        Adds funds without a payment: only where the gateway’s operator allows it
        (DASHBOARD_WALLET_TOPUP).
      </p>
      <div class="row">
        <label>
          Amount ({props.currency})
          <input
            name="top-up-amount"
            inputMode="decimal"
            required
            value={amount}
            onInput={(event) => setAmount(event.currentTarget.value)}
          />
        </label>
        <button type="submit">Top up…</button>
      </div>
      {!confirming && <ErrorNote error={action.error} />}
      <p class="muted small" role="status" aria-live="polite">
        {done && `Added ${done}.`}
      </p>
      {confirming && (
        <Confirm
          title={`Add ${money(amount.trim(), props.currency)} to the wallet?`}
          confirmLabel="Add funds"
          tone="constructive"
          write={() => api.create(`${props.base}/wallet/top-ups`, { amount: amount.trim() })}
          onDone={() => {
            setConfirming(false);
            setDone(money(amount.trim(), props.currency));
            setAmount('');
            props.onDone();
          }}
          onCancel={() => setConfirming(false)}
        >
          <p>
            The balance grows by this amount at once, on every gateway instance. The top-up is
            recorded in the wallet’s history and the audit log.
          </p>
        </Confirm>
      )}
    </form>
  );
}

function LowBalanceAlert({ base, manage }: { base: string; manage: boolean }) {
  const alert = useLoad<WalletAlert>(`${base}/wallet-alert`);
  const [threshold, setThreshold] = useState('');
  const action = useAction();
  const save = (value: string | null) => {
    const problem = value === null ? null : amountProblem(value, { zero: true });
    if (problem) {
      action.refuse(problem);
      return;
    }
    void action
      .run(() => api.put(`${base}/wallet-alert`, { low_balance_threshold: value }))
      .then((ok) => {
        if (!ok) return;
        setThreshold('');
        alert.reload();
      });
  };
  return (
    <section class="card" aria-labelledby="wallet-alert-heading">
      <h2 id="wallet-alert-heading">Low-balance alert</h2>
      <ErrorNote error={alert.error} />
      {alert.loading && <Loading what="the alert" />}
      {alert.data &&
        (alert.data.low_balance_threshold === null ? (
          <p class="muted">No alert set.</p>
        ) : (
          <p>
            A <code>wallet.low_balance</code> webhook is sent when the balance falls below{' '}
            <Money value={alert.data.low_balance_threshold} currency={alert.data.currency} />.
          </p>
        ))}
      {manage && alert.data && (
        <form
          onInput={() => action.clear()}
          onSubmit={(event) => {
            event.preventDefault();
            save(threshold.trim());
          }}
        >
          <div class="row">
            <label>
              Alert below ({alert.data.currency})
              <input
                name="low-balance-threshold"
                inputMode="decimal"
                required
                value={threshold}
                onInput={(event) => setThreshold(event.currentTarget.value)}
              />
            </label>
            <button type="submit" disabled={action.busy}>
              Set alert
            </button>
            {alert.data.low_balance_threshold !== null && (
              <button
                type="button"
                class="secondary"
                disabled={action.busy}
                onClick={() => save(null)}
              >
                Remove alert
              </button>
            )}
          </div>
          <ErrorNote error={action.error} />
        </form>
      )}
    </section>
  );
}
