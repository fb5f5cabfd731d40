// Small building blocks every page uses: links, loading, empty and error states, confirmations.
import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import type { ApiError } from './api.js';
import type { Paged } from './hooks.js';
import { exactAmount } from './money.js';
import { hrefOf, navigate, type View } from './router.js';

export function Link(props: {
  to: View;
  children: ComponentChildren;
  class?: string;
  current?: boolean;
}) {
  return (
    <a
      href={hrefOf(props.to)}
      class={props.class}
      aria-current={props.current ? 'page' : undefined}
      onClick={(event) => {
        if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey) return;
        event.preventDefault();
        navigate(props.to);
      }}
    >
      {props.children}
    </a>
  );
}

export function ErrorNote({ error }: { error: ApiError | null }) {
  if (!error) return null;
  return (
    <p class="error" role="alert">
      {error.message}
      {error.code.startsWith('gw_') && <span class="code"> ({error.code})</span>}
    </p>
  );
}

export function Loading({ what }: { what: string }) {
  return (
    <p class="muted" role="status" aria-live="polite">
      <span class="spinner" aria-hidden="true" /> Loading {what}…
    </p>
  );
}

export function Empty({ children }: { children: ComponentChildren }) {
  return <p class="empty">{children}</p>;
}

export function PageHeader(props: { title: string; children?: ComponentChildren }) {
  return (
    <header class="page-header">
      <h1 tabIndex={-1}>{props.title}</h1>
      {props.children && <p class="lede">{props.children}</p>}
    </header>
  );
}

/** A modal confirmation (the native dialog: focus stays inside, Escape cancels). */
export function Confirm(props: {
  title: string;
  children: ComponentChildren;
  confirmLabel: string;
  busy: boolean;
  error: ApiError | null;
  onConfirm(): void;
  onCancel(): void;
}) {
  const dialog = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const element = dialog.current;
    if (element && !element.open) element.showModal();
    return () => element?.close();
  }, []);
  return (
    <dialog
      ref={dialog}
      class="confirm"
      aria-labelledby="confirm-title"
      onCancel={(event) => {
        event.preventDefault();
        props.onCancel();
      }}
    >
      <h2 id="confirm-title">{props.title}</h2>
      <div class="confirm-body">{props.children}</div>
      <ErrorNote error={props.error} />
      <div class="actions">
        <button type="button" class="secondary" onClick={props.onCancel}>
          Cancel
        </button>
        <button type="button" class="danger" disabled={props.busy} onClick={props.onConfirm}>
          {props.busy ? 'Working…' : props.confirmLabel}
        </button>
      </div>
    </dialog>
  );
}

export function formatTime(iso: string): string {
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleString();
}

/** An exact amount with its currency in smaller type (reads as `12.50 USD`). */
export function Money({ value, currency }: { value: string; currency: string }) {
  return (
    <span class="money-value">
      {exactAmount(value)} <span class="currency">{currency}</span>
    </span>
  );
}

/** Loads the next page of a list whose newest rows may not be loaded yet. */
export function MoreButton(props: { list: Paged<unknown>; what: string }) {
  if (!props.list.hasMore) return null;
  return (
    <button
      type="button"
      class="secondary"
      disabled={props.list.loadingMore}
      onClick={props.list.more}
    >
      {props.list.loadingMore ? 'Loading…' : `Load more ${props.what} (not all are shown)`}
    </button>
  );
}

/** A status word in a coloured pill (the word itself carries the meaning, not the colour). */
export function Status({ value }: { value: string }) {
  return <span class={`status ${value}`}>{value}</span>;
}

/**
 * A secret shown once (a new API or service key): the value, a copy button, and a warning that
 * it will not be shown again. Dismissing it forgets the value.
 */
export function ShownOnce(props: {
  title: string;
  value: string;
  onDone(): void;
  /** What the value is (default: a key gw keeps only a hash of). */
  label?: string;
  noun?: string;
  warning?: ComponentChildren;
}) {
  const label = props.label ?? 'New key';
  const noun = props.noun ?? 'key';
  const field = useRef<HTMLInputElement>(null);
  const [copied, setCopied] = useState<'yes' | 'failed' | null>(null);
  useEffect(() => {
    field.current?.focus();
    field.current?.select();
  }, []);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(props.value);
      setCopied('yes');
    } catch {
      field.current?.select();
      setCopied('failed');
    }
  };
  return (
    <section class="card shown-once" role="region" aria-labelledby="shown-once-heading">
      <h2 id="shown-once-heading">{props.title}</h2>
      <p class="warning">
        <strong>Copy it now: this is the only time it is shown.</strong>{' '}
        {props.warning ??
          'gw keeps only a hash of it; if it is lost, rotate or revoke it and issue a new one.'}
      </p>
      <div class="row">
        <label class="grow">
          {label}
          <input ref={field} readOnly value={props.value} class="secret" spellcheck={false} />
        </label>
        <button type="button" onClick={() => void copy()}>
          Copy
        </button>
      </div>
      <p class="muted small" role="status" aria-live="polite">
        {copied === 'yes' && 'Copied to the clipboard.'}
        {copied === 'failed' &&
          `The browser did not allow copying: the ${noun} is selected, press Ctrl+C (⌘C).`}
      </p>
      <div class="actions">
        <button type="button" class="secondary" onClick={props.onDone}>
          I have stored it: hide the {noun}
        </button>
      </div>
    </section>
  );
}

/** A day as the API counts it (UTC), YYYY-MM-DD. */
export const isoDay = (date: Date): string => date.toISOString().slice(0, 10);
