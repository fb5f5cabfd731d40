// Granting credits to one product user (their profile's form): checked as typed, then confirmed
// in a dialog that says what goes to whom (amount, currency, user, expiry) before anything is
// sent, as the wallet's top-up and every destructive action confirm.
import { useState } from 'preact/hooks';
import { api, newIdempotencyKey } from '../api.js';
import { useAction, useNotice } from '../hooks.js';
import { amountProblem, money } from '../money.js';
import { shownText } from '../shown-text.js';
import type { CreditGrant, Credits, ProductUserProfile } from '../types.js';
import { Confirm, ErrorNote, Fact, Facts, formatTime, Id } from '../ui.js';

/** The body of a grant, as the confirmation shows it and the API takes it. */
interface GrantBody {
  readonly amount: string;
  readonly currency: string;
  readonly expires_at?: string;
  readonly reason?: string;
}

/** What is wrong with a grant as typed (said before the confirmation), or null. */
function grantProblem(amount: string, currency: string, expires: string): string | null {
  const amountIssue = amountProblem(amount);
  if (amountIssue) return amountIssue;
  if (!/^[A-Z]{3}$/.test(currency)) return 'Enter the currency as its three-letter code, like USD.';
  if (expires && new Date(expires).getTime() <= Date.now()) {
    return 'The expiry is in the past: choose a later time, or leave it empty for credits that do not expire.';
  }
  return null;
}

export function GrantCredits(props: {
  path: string;
  user: ProductUserProfile;
  /** The name of the user's app, once loaded. */
  appName: string | null;
  /** What the user's requests are charged in. */
  currency: string;
  onGranted(): void;
}) {
  const [amount, setAmount] = useState('');
  const [currency, setCurrency] = useState(props.user.credits.currency);
  const [expires, setExpires] = useState('');
  const [reason, setReason] = useState('');
  // One key per grant being filled in: a double submit or a retry grants once.
  const [idempotencyKey, setIdempotencyKey] = useState(newIdempotencyKey);
  // the grant the confirmation shows (and sends, if confirmed)
  const [confirming, setConfirming] = useState<GrantBody | null>(null);
  const [done, setDone] = useNotice<string>();
  const action = useAction();
  const typedCurrency = currency.trim().toUpperCase();
  const otherCurrency = (code: string) =>
    /^[A-Z]{3}$/.test(code) && code !== props.currency ? code : null;
  const typedOther = otherCurrency(typedCurrency);
  return (
    <form
      class="card"
      aria-labelledby="grant-heading"
      onInput={() => action.clear()}
      onSubmit={(event) => {
        event.preventDefault();
        setDone(null);
        const problem = grantProblem(amount, typedCurrency, expires);
        if (problem) {
          action.refuse(problem);
          return;
        }
        action.clear();
        setConfirming({
          amount: amount.trim(),
          currency: typedCurrency,
          ...(expires && { expires_at: new Date(expires).toISOString() }),
          ...(reason.trim() && { reason: reason.trim() }),
        });
      }}
    >
      <h2 id="grant-heading">Grant credits</h2>
      <div class="row">
        <label>
          Amount
          <input
            name="grant-amount"
            inputMode="decimal"
            required
            placeholder="5.00"
            value={amount}
            onInput={(event) => setAmount(event.currentTarget.value)}
          />
        </label>
        <label class="narrow">
          Currency
          <input
            name="grant-currency"
            required
            maxLength={3}
            value={currency}
            onInput={(event) => setCurrency(event.currentTarget.value)}
          />
        </label>
        <label>
          Expires (optional, your local time)
          <input
            type="datetime-local"
            name="grant-expires"
            value={expires}
            onInput={(event) => setExpires(event.currentTarget.value)}
          />
        </label>
      </div>
      {typedOther && <OtherCurrencyNote credits={typedOther} charged={props.currency} />}
      <label>
        Reason (optional)
        <input
          name="grant-reason"
          maxLength={500}
          value={reason}
          onInput={(event) => setReason(event.currentTarget.value)}
        />
      </label>
      {!confirming && <ErrorNote error={action.error} />}
      <p class="ok" role="status" aria-live="polite">
        {done}
      </p>
      <button type="submit">Grant credits…</button>
      {confirming && (
        <Confirm
          title={`Grant ${money(confirming.amount, confirming.currency)} of credits?`}
          confirmLabel={`Grant ${money(confirming.amount, confirming.currency)}`}
          tone="constructive"
          write={() =>
            api.post<CreditGrant & { credits: Credits }>(
              `${props.path}/credit-grants`,
              confirming,
              { 'idempotency-key': idempotencyKey },
            )
          }
          onDone={(granted) => {
            setConfirming(null);
            setDone(
              `Granted ${money(granted.amount, granted.currency)}. Available credits now ${money(granted.credits.available_credits, granted.credits.currency)}.`,
            );
            setAmount('');
            setReason('');
            setExpires('');
            setIdempotencyKey(newIdempotencyKey());
            props.onGranted();
          }}
          onCancel={() => setConfirming(null)}
        >
          <Facts>
            <Fact term="To">
              {props.user.display_name && <>{shownText(props.user.display_name)}, </>}
              <Id value={props.user.external_user_id} />
            </Fact>
            <Fact term="In app">{props.appName ?? <Id value={props.user.app_id} />}</Fact>
            <Fact term="Amount">
              <strong>{money(confirming.amount, confirming.currency)}</strong>
            </Fact>
            <Fact term="Expires">
              {confirming.expires_at ? formatTime(confirming.expires_at) : 'never'}
            </Fact>
            {confirming.reason && <Fact term="Reason">{confirming.reason}</Fact>}
          </Facts>
          {otherCurrency(confirming.currency) && (
            <OtherCurrencyNote credits={confirming.currency} charged={props.currency} />
          )}
          <p>
            Their requests can spend the credits at once, on every gateway instance. The grant is
            recorded in the audit log; you can revoke what is left of it later.
          </p>
        </Confirm>
      )}
    </form>
  );
}

function OtherCurrencyNote(props: { credits: string; charged: string }) {
  return (
    <p class="warning" role="note">
      Credits in {props.credits} pay only for costs in {props.credits}; this user’s requests are
      charged in {props.charged}.
    </p>
  );
}
