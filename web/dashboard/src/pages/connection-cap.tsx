// A connection's caps and settings: its monthly cap, the per-user default for its product users,
// its credit mode and overrun policy, changed or removed through PUT/DELETE
// /dashboard/api/connections/{id}/cap. One form, on the Caps page (under the connection picked)
// and on Connected apps (a connected app's own card, with what it spent this month: decision
// 423). A cap at or below what the connection spent this month refuses its next request: that
// asks first.
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { type EditedField, useAction, useEditedField, useLoad, useNotice } from '../hooks.js';
import { amountProblem, compareDecimals, plainAmount } from '../money.js';
import type { CapState } from '../types.js';
import { Confirm, EditCardActions, ErrorNote, Loading, Money } from '../ui.js';
import {
  creditModes,
  overrunPolicies,
  type CreditMode,
  type OverrunPolicy,
} from './connection-settings.js';
import { ChoiceField } from './settings-fields.js';

/** The currency caps are set in (the settlement currency). */
export const CAP_CURRENCY = 'USD';

/** A connected app whose caps the form edits in a card of its own (Connected apps). */
export interface CappedApp {
  readonly name: string;
  /** What it spent this month (calendar month, UTC). */
  readonly spentThisMonth: string;
  readonly currency: string;
  /** After each write: the list shows the cap it holds. */
  onSaved(): void;
  onClose(): void;
}

/**
 * The caps of one connection, read from the API: the form under the Caps page's connection
 * picker, or a connected app's card (`app`: its heading, its spend this month, Close).
 */
export function ConnectionCap(props: { connectionId: string; manage: boolean; app?: CappedApp }) {
  const path = `/dashboard/api/connections/${encodeURIComponent(props.connectionId)}/cap`;
  const state = useLoad<CapState>(path);
  // a reload after a save keeps the form (and its "Saved.") in place
  const body = state.data ? (
    <ConnectionCapForm
      path={path}
      state={state.data}
      manage={props.manage}
      app={props.app}
      reload={state.reload}
    />
  ) : state.loading ? (
    <Loading what="the connection cap" />
  ) : (
    <ErrorNote error={state.error} />
  );
  if (!props.app) return body;
  return (
    <section class="card" aria-labelledby="connection-cap-heading">
      <h2 id="connection-cap-heading">Caps of {props.app.name}</h2>
      {body}
      {!state.data && !state.loading && (
        <div class="actions">
          <button type="button" class="secondary" onClick={props.app.onClose}>
            Close
          </button>
        </div>
      )}
    </section>
  );
}

/** A cap amount typed at or below this month's spend, with the write that sets it. */
interface Lowering {
  readonly amount: string;
  readonly changes: Record<string, unknown>;
}

function ConnectionCapForm(props: {
  path: string;
  state: CapState;
  manage: boolean;
  app: CappedApp | undefined;
  reload(): void;
}) {
  const { app } = props;
  const { cap, connection } = props.state;
  // each field follows the loaded state until edited; a save writes the edited ones only
  const amount = useEditedField(cap?.amount ? plainAmount(cap.amount) : '');
  const perUser = useEditedField(cap?.per_user_amount ? plainAmount(cap.per_user_amount) : '');
  const creditMode = useEditedField<CreditMode>(connection?.credit_mode ?? 'enforce');
  const overrun = useEditedField<OverrunPolicy>(connection?.overrun_policy ?? 'limit_output');
  const [lowering, setLowering] = useState<Lowering | null>(null);
  const [clearing, setClearing] = useState(false);
  const [saved, setSaved] = useNotice<string>();
  const action = useAction();
  const name = app?.name ?? 'this connection';
  // what it spent this month where the page knows it; elsewhere a cap of 0 still asks
  const spent = app?.spentThisMonth ?? '0';
  const done = (notice: string) => {
    setLowering(null);
    setClearing(false);
    setSaved(notice);
    props.reload();
    app?.onSaved();
  };
  const savedNotice = 'Saved. Every gateway instance applies it to its next request.';
  const save = (event: Event) => {
    event.preventDefault();
    setSaved(null);
    const problem = [amount.value, perUser.value]
      .filter((value) => value.trim() !== '')
      .map((value) => amountProblem(value, { zero: true }))
      .find((found) => found !== null);
    if (problem) {
      action.refuse(problem);
      return;
    }
    const orNull = (value: string) => (value.trim() === '' ? null : value.trim());
    // the fields changed only: another admin's change to the others meanwhile stays
    const changes = {
      // a connection without a cap yet needs its amount, even none (null)
      ...((amount.changed || !cap) && { amount: orNull(amount.value) }),
      ...(perUser.changed && { per_user_amount: orNull(perUser.value) }),
      ...(creditMode.changed && { credit_mode: creditMode.value }),
      ...(overrun.changed && { overrun_policy: overrun.value }),
    };
    const typed = changes.amount ?? null;
    // at or below this month's spend, the next request is refused: that asks first
    if (typed !== null && compareDecimals(typed, spent) <= 0) {
      setLowering({ amount: typed, changes });
      return;
    }
    action.submit(
      () =>
        Object.keys(changes).length === 0 ? Promise.resolve(null) : api.put(props.path, changes),
      () => done(savedNotice),
    )(event);
  };
  const removeButton = cap && (
    <button type="button" class="secondary danger" onClick={() => setClearing(true)}>
      Remove caps…
    </button>
  );
  return (
    <div>
      {cap?.amount ? (
        <p>
          Connection cap: <Money value={cap.amount} currency={cap.currency} /> a month
        </p>
      ) : (
        <p class="muted">No connection-wide cap.</p>
      )}
      {cap?.per_user_amount ? (
        <p>
          Per-user default: <Money value={cap.per_user_amount} currency={cap.currency} /> a month
          for each product user
        </p>
      ) : (
        <p class="muted">No per-user default cap.</p>
      )}
      {app && (
        <p class="muted small">
          Spent this month: <Money value={app.spentThisMonth} currency={app.currency} />. Requests
          of the app that would pass its cap are refused (403).
        </p>
      )}
      {props.manage ? (
        <form
          onInput={() => {
            action.clear();
            setSaved(null);
          }}
          onSubmit={save}
        >
          <div class="row">
            <CapAmountField
              label={`Connection cap (${CAP_CURRENCY}, empty: none)`}
              name="connection-cap-amount"
              field={amount}
            />
            <CapAmountField
              label={`Per-user default cap (${CAP_CURRENCY}, empty: none)`}
              name="connection-cap-per-user"
              field={perUser}
            />
          </div>
          <div class="row">
            <ChoiceField<CreditMode>
              id="connection-credit-mode"
              label="Credit mode"
              choices={creditModes}
              value={creditMode.value}
              onChange={creditMode.set}
            />
            <ChoiceField<OverrunPolicy>
              id="connection-overrun-policy"
              label="Overrun policy"
              choices={overrunPolicies}
              value={overrun.value}
              onChange={overrun.set}
            />
          </div>
          <ErrorNote error={action.error} />
          {app ? (
            <EditCardActions
              busy={action.busy}
              saveLabel="Save connection cap"
              saved={saved}
              onClose={app.onClose}
            >
              {removeButton}
            </EditCardActions>
          ) : (
            <>
              <div class="actions">
                <button type="submit" disabled={action.busy}>
                  {action.busy ? 'Saving…' : 'Save connection cap'}
                </button>
                {removeButton}
              </div>
              <p class="muted small" role="status" aria-live="polite">
                {saved}
              </p>
            </>
          )}
        </form>
      ) : (
        connection && (
          <p class="muted">
            Credit mode: {connection.credit_mode} · overrun policy: {connection.overrun_policy}
          </p>
        )
      )}
      {lowering && (
        <Confirm
          title={`Cap ${name} at ${plainAmount(lowering.amount)} ${CAP_CURRENCY}?`}
          confirmLabel="Set cap"
          write={() => api.put(props.path, lowering.changes)}
          onDone={() => done(savedNotice)}
          onCancel={() => setLowering(null)}
        >
          <p>
            {app ? (
              <>
                The app has spent <Money value={app.spentThisMonth} currency={app.currency} /> this
                month: its requests that cost anything are refused with 403 until the month ends or
                the cap is raised.
              </>
            ) : (
              <>
                Every request of the connection that costs anything is refused with 403 until the
                cap is raised or removed.
              </>
            )}
          </p>
        </Confirm>
      )}
      {clearing && (
        <ClearCap
          path={props.path}
          title={`Remove the caps of ${name}?`}
          what="The connection’s cap and its per-user default both go: its requests and its product users without their own cap are no longer limited by them (the organization’s cap, if any, still applies)."
          onClose={() => setClearing(false)}
          onCleared={() =>
            done('Caps removed. Every gateway instance stops applying them at once.')
          }
        />
      )}
    </div>
  );
}

/** A cap's amount field (empty: none). */
function CapAmountField(props: { label: string; name: string; field: EditedField<string> }) {
  return (
    <label>
      {props.label}
      <input
        name={props.name}
        inputMode="decimal"
        autoComplete="off"
        value={props.field.value}
        onInput={(event) => props.field.set(event.currentTarget.value)}
      />
    </label>
  );
}

/** Asks before removing a cap (the organization's, a connection's, a product user's). */
export function ClearCap(props: {
  path: string;
  title: string;
  what: string;
  onClose(): void;
  onCleared(): void;
}) {
  return (
    <Confirm
      title={props.title}
      confirmLabel="Remove cap"
      write={() => api.delete(props.path)}
      onDone={props.onCleared}
      onCancel={props.onClose}
    >
      <p>{props.what} Every gateway instance stops applying it at once.</p>
    </Confirm>
  );
}
