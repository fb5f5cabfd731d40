// Small building blocks every page uses: links, loading, empty and error states, confirmations.
import type { ComponentChildren } from 'preact';
import { useEffect, useRef } from 'preact/hooks';
import type { ApiError } from './api.js';
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
      <h1>{props.title}</h1>
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

/**
 * An exact decimal string from the API, shown without trailing zeros past the cents: the value
 * is never rounded (a price of 0.000150000000 shows as 0.00015).
 */
export function exactAmount(value: string): string {
  const [whole, fraction = ''] = value.split('.');
  const trimmed = fraction.replace(/0+$/, '').padEnd(2, '0');
  return `${whole}.${trimmed}`;
}

export function ComingSoon({ title, children }: { title: string; children: ComponentChildren }) {
  return (
    <section class="card slot" aria-label={`${title} (coming)`}>
      <h2>
        {title} <span class="badge">coming</span>
      </h2>
      <p class="muted">{children}</p>
    </section>
  );
}
