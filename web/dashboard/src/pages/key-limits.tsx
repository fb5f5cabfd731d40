// An API key's request-rate limits (decision 344), on the keys page and, for a connected app's
// token, on the Connected apps page (decision 352): the two fields of the create and edit
// forms, the list's summary, and the edit card, which asks first when a change would refuse
// requests that pass now.
import { Fragment } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { api } from '../api.js';
import { useAction, useNotice } from '../hooks.js';
import type { ApiKeyRow } from '../types.js';
import { Confirm, EditCardActions, ErrorNote, Fact, Facts } from '../ui.js';
import {
  changedLimits,
  LIMIT_LABELS,
  limitsOf,
  limitsProblem,
  limitsSummary,
  limitText,
  lowersALimit,
  typedLimits,
  type RequestLimits,
  type TypedLimits,
} from './request-limits.js';

export const NO_LIMITS_TYPED: TypedLimits = { perKey: '', perUser: '' };

/** What holds the limits, as the fields' hints and the edit card name it: an API key, or a
 * connected app (its OAuth token). */
export type LimitHolder = 'key' | 'app';

const HOLDER_WORDS = {
  key: { requestsWith: 'requests with the key', of: 'of the key', next: 'the key’s next request' },
  app: { requestsWith: 'requests by the app', of: 'of the app', next: 'the app’s next request' },
} as const;

const limitHints = (holder: LimitHolder) => ({
  perKey: `Bursts of up to this many ${HOLDER_WORDS[holder].requestsWith}, then this many a minute; more are refused (429). Empty: unlimited.`,
  perUser: `The same, counted for each product user ${HOLDER_WORDS[holder].of} on their own. Empty: unlimited.`,
});

/** The two limit fields of a form (`idPrefix` names their inputs: `<prefix>-rpm`, …). */
export function LimitFields(props: {
  idPrefix: string;
  value: TypedLimits;
  /** A state setter: each field changes its own part of the latest value (two quick edits
   * before a render must not undo one another). */
  onChange(update: (previous: TypedLimits) => TypedLimits): void;
  /** The first field takes focus when it appears (the edit card, below a long list). */
  autoFocus?: boolean;
  /** What the limits are of (the hints say it): an API key unless given. */
  holder?: LimitHolder;
}) {
  const hints = limitHints(props.holder ?? 'key');
  const first = useRef<HTMLInputElement>(null);
  useEffect(() => {
    if (props.autoFocus) first.current?.focus();
  }, []);
  const field = (which: keyof TypedLimits, id: string) => (
    <div class="field">
      <label for={id}>{LIMIT_LABELS[which]}</label>
      <input
        id={id}
        name={id}
        ref={which === 'perKey' ? first : undefined}
        inputMode="numeric"
        autoComplete="off"
        placeholder="unlimited"
        aria-describedby={`${id}-hint`}
        value={props.value[which]}
        onInput={(event) => {
          const typed = event.currentTarget.value;
          props.onChange((previous) => ({ ...previous, [which]: typed }));
        }}
      />
      <span class="hint" id={`${id}-hint`}>
        {hints[which]}
      </span>
    </div>
  );
  return (
    <div class="row top">
      {field('perKey', `${props.idPrefix}-rpm`)}
      {field('perUser', `${props.idPrefix}-user-rpm`)}
    </div>
  );
}

/** A key's limits in a table cell: `60/min · 10/min per user`, or a muted `unlimited`. */
export function LimitsSummary({ limits }: { limits: RequestLimits }) {
  const pieces = limitsSummary(limits);
  if (pieces.length === 1 && limits.requests_per_minute === null) {
    return <span class="muted">unlimited</span>;
  }
  return (
    <>
      {pieces.map((piece, index) => (
        <Fragment key={index}>
          {index > 0 && ' · '}
          <span class="nowrap">{piece}</span>
        </Fragment>
      ))}
    </>
  );
}

/**
 * A key's (or connected app's) limits in its row of a list, with (for those who may change
 * them) a small button that opens the edit card: in the cell, so that the row's actions stay
 * two buttons wide.
 */
export function LimitsCell(props: {
  limits: RequestLimits;
  /** The key as the list names it: the button's accessible name says whose limits. */
  name: string;
  /** Null: the limits are read only (a viewer or member, a revoked key or app). */
  onEdit: (() => void) | null;
  editing: boolean;
}) {
  return (
    <span class="limits-cell">
      <span>
        <LimitsSummary limits={props.limits} />
      </span>
      {props.onEdit && (
        <button
          type="button"
          class="secondary small-button"
          aria-label={`Edit limits of ${props.name}`}
          aria-expanded={props.editing}
          onClick={props.onEdit}
        >
          Edit
        </button>
      )}
    </span>
  );
}

/** One limit's change in a confirmation: `unlimited → 60/min`, or `10/min (unchanged)`. */
const change = (now: number | null, next: number | null): string =>
  now === next ? `${limitText(next)} (unchanged)` : `${limitText(now)} → ${limitText(next)}`;

/**
 * Changes a key's limits (an API key, or a connected app's OAuth token: the API changes both
 * alike): the form starts with the limits in force; a change that sets or lowers one asks
 * first (apps sending more start getting 429 at once), one that raises or clears them (empty
 * fields) is saved at once. Saved, it shows the limits now in force. Closed, it gives focus
 * back to the Edit button that opened it.
 */
export function EditLimits(props: {
  /** The key or token (its id in the API) and the limits it has. */
  limited: RequestLimits & { readonly id: string };
  /** As the list names it (a key's name or hint; a connected app's name). */
  name: string;
  /** What the card's words call it: an API key unless given. */
  holder?: LimitHolder;
  onSaved(): void;
  onClose(): void;
}) {
  const holder = props.holder ?? 'key';
  const path = `/dashboard/api/api-keys/${encodeURIComponent(props.limited.id)}`;
  // the limits in force, as the last answer had them
  const [current, setCurrent] = useState<RequestLimits>(props.limited);
  const [typed, setTyped] = useState<TypedLimits>(typedLimits(props.limited));
  const [lowering, setLowering] = useState<RequestLimits | null>(null);
  const [saved, setSaved] = useNotice<true>();
  const action = useAction();
  // only what the form changed from the limits it showed: another admin's change to the other
  // limit meanwhile stays
  const write = (next: RequestLimits) => api.patch<ApiKeyRow>(path, changedLimits(current, next));
  const done = (key: ApiKeyRow) => {
    setLowering(null);
    setCurrent(key);
    setTyped(typedLimits(key));
    setSaved(true);
    props.onSaved();
  };
  return (
    <section class="card" aria-labelledby="edit-limits-heading">
      <h2 id="edit-limits-heading">Rate limits of {props.name}</h2>
      <p class="muted small">
        Now: <LimitsSummary limits={current} />. A change applies to {HOLDER_WORDS[holder].next} on
        every gateway instance.
      </p>
      <form
        aria-labelledby="edit-limits-heading"
        onInput={() => {
          action.clear();
          setSaved(null);
        }}
        onSubmit={(event) => {
          event.preventDefault();
          setSaved(null);
          const problem = limitsProblem(typed);
          const next = limitsOf(typed);
          if (problem) action.refuse(problem);
          // the limits typed are those in force: nothing to send
          else if (Object.keys(changedLimits(current, next)).length === 0) setSaved(true);
          // a stricter limit can refuse live traffic: that asks first
          else if (lowersALimit(current, next)) setLowering(next);
          else void action.run(() => write(next)).then((answer) => answer && done(answer.value));
        }}
      >
        <LimitFields
          idPrefix="edit-key"
          value={typed}
          onChange={setTyped}
          holder={holder}
          autoFocus
        />
        <ErrorNote error={action.error} />
        <EditCardActions
          busy={action.busy}
          saveLabel="Save limits"
          saved={saved ? 'Saved.' : null}
          onClose={props.onClose}
        />
      </form>
      {lowering && (
        <Confirm
          title={`Lower the rate limits of ${props.name}?`}
          confirmLabel="Lower limits"
          write={() => write(lowering)}
          onDone={done}
          onCancel={() => setLowering(null)}
        >
          <Facts>
            <Fact term={LIMIT_LABELS.perKey}>
              {change(current.requests_per_minute, lowering.requests_per_minute)}
            </Fact>
            <Fact term="Per product user">
              {change(
                current.product_user_requests_per_minute,
                lowering.product_user_requests_per_minute,
              )}
            </Fact>
          </Facts>
          <p>
            Within moments, on every gateway instance, requests over a limit are refused with 429
            and told when to retry. Apps sending more than this now start getting those refusals
            right away.
          </p>
        </Confirm>
      )}
    </section>
  );
}
