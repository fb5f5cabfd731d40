// A connected app's monthly spending cap (decision 415): the one set on the consent page, or
// none, changed or removed here by admins through the connection-cap routes every connection
// uses (PUT/DELETE /dashboard/api/connections/{id}/cap). A cap of 0, or one below what the app
// spent this month, refuses its next request: that asks first.
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { useAction, useNotice } from '../hooks.js';
import { amountProblem, compareDecimals, plainAmount } from '../money.js';
import type { CapState } from '../types.js';
import { Confirm, EditCardActions, ErrorNote, Money } from '../ui.js';

export interface CappedApp {
  readonly id: string;
  readonly app_name: string;
  readonly monthly_cap: string | null;
  readonly currency: string;
  readonly spend: { readonly this_month: { readonly cost: string } };
}

/** Under what the app spent this month in the list: its monthly cap, or that it has none. */
export function CapCell({ app }: { app: CappedApp }) {
  return app.monthly_cap === null ? (
    <span class="muted">no cap</span>
  ) : (
    <>
      cap <Money value={app.monthly_cap} currency={app.currency} />
    </>
  );
}

export function EditConnectedAppCap(props: { app: CappedApp; onSaved(): void; onClose(): void }) {
  const { app } = props;
  const path = `/dashboard/api/connections/${encodeURIComponent(app.id)}/cap`;
  const [current, setCurrent] = useState<string | null>(app.monthly_cap);
  const [amount, setAmount] = useState(current === null ? '' : plainAmount(current));
  const [lowering, setLowering] = useState<string | null>(null);
  const [removing, setRemoving] = useState(false);
  const [saved, setSaved] = useNotice<string>();
  const action = useAction();
  const write = (value: string) => api.put<CapState>(path, { amount: value });
  const done = (state: CapState | null, notice: string) => {
    setLowering(null);
    setRemoving(false);
    const next = state?.cap?.amount ?? null;
    setCurrent(next);
    setAmount(next === null ? '' : plainAmount(next));
    setSaved(notice);
    props.onSaved();
  };
  return (
    <section class="card" aria-labelledby="edit-cap-heading">
      <h2 id="edit-cap-heading">Monthly cap of {app.app_name}</h2>
      <p class="muted small">
        Now:{' '}
        {current === null ? (
          'no cap'
        ) : (
          <>
            <Money value={current} currency={app.currency} /> a month
          </>
        )}
        ; spent this month: <Money value={app.spend.this_month.cost} currency={app.currency} />.
        Requests of the app that would pass the cap are refused (403). A change applies to its next
        request on every gateway instance.
      </p>
      <form
        aria-labelledby="edit-cap-heading"
        onInput={() => {
          action.clear();
          setSaved(null);
        }}
        onSubmit={(event) => {
          event.preventDefault();
          setSaved(null);
          const typed = amount.trim();
          const problem = amountProblem(typed, { zero: true });
          if (problem) action.refuse(problem);
          // at or below this month's spend, the app's next request is refused: that asks first
          else if (compareDecimals(typed, app.spend.this_month.cost) <= 0) setLowering(typed);
          else
            void action
              .run(() => write(typed))
              .then((answer) => answer && done(answer.value, 'Saved.'));
        }}
      >
        <div class="field">
          <label for="connected-app-cap">Monthly cap ({app.currency})</label>
          <input
            id="connected-app-cap"
            name="connected-app-cap"
            inputMode="decimal"
            autoComplete="off"
            value={amount}
            onInput={(event) => setAmount(event.currentTarget.value)}
          />
        </div>
        <ErrorNote error={action.error} />
        <EditCardActions
          busy={action.busy}
          saveLabel="Save cap"
          saved={saved}
          onClose={props.onClose}
        />
        {current !== null && (
          <button type="button" class="secondary danger" onClick={() => setRemoving(true)}>
            Remove cap…
          </button>
        )}
      </form>
      {lowering !== null && (
        <Confirm
          title={`Cap ${app.app_name} at ${plainAmount(lowering)} ${app.currency}?`}
          confirmLabel="Set cap"
          write={() => write(lowering)}
          onDone={(state: CapState) => done(state, 'Saved.')}
          onCancel={() => setLowering(null)}
        >
          <p>
            The app has spent <Money value={app.spend.this_month.cost} currency={app.currency} />{' '}
            this month: its requests that cost anything are refused with 403 until the month ends or
            the cap is raised.
          </p>
        </Confirm>
      )}
      {removing && (
        <Confirm
          title={`Remove the cap of ${app.app_name}?`}
          confirmLabel="Remove cap"
          write={() => api.delete<CapState>(path)}
          onDone={() => done(null, 'Cap removed.')}
          onCancel={() => setRemoving(false)}
        >
          <p>
            The app’s requests are no longer limited to a monthly amount (the organization’s own
            cap, if any, still applies). Every gateway instance stops applying it at once.
          </p>
        </Confirm>
      )}
    </section>
  );
}
