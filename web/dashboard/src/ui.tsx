// Small building blocks every page uses: links, loading, empty and error states, confirmations.
import { Fragment, type ComponentChildren } from 'preact';
import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import type { ApiError } from './api.js';
import { useAction, type Loaded, type Paged } from './hooks.js';
import { exactAmount } from './money.js';
import { hrefOf, navigate, type View } from './router.js';
import { shownText } from './shown-text.js';

export function Link(props: {
  to: View;
  children: ComponentChildren;
  class?: string;
  current?: boolean;
  title?: string;
}) {
  return (
    <a
      href={hrefOf(props.to)}
      class={props.class}
      title={props.title}
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

/**
 * The foot of an edit card's form: its save button (busy while the write runs), Close (focus
 * goes back to the button that opened the card) and the status line `saved` fills in.
 */
export function EditCardActions(props: {
  busy: boolean;
  saveLabel: string;
  /** What the status line says after a save (empty until then). */
  saved: string | null;
  onClose(): void;
  /** More buttons of the card, after Close (Remove…). */
  children?: ComponentChildren;
}) {
  // rendered with the card: the button that opened it still has focus
  const returnFocus = useFocusReturn();
  return (
    <Fragment>
      <div class="actions">
        <button type="submit" disabled={props.busy}>
          {props.busy ? 'Saving…' : props.saveLabel}
        </button>
        <button
          type="button"
          class="secondary"
          onClick={() => {
            returnFocus();
            props.onClose();
          }}
        >
          Close
        </button>
        {props.children}
      </div>
      <p class="muted small" role="status" aria-live="polite">
        {props.saved}
      </p>
    </Fragment>
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

/** A page's heading (its title: text, or an id as <IdText> breaks it), its facts and its lede. */
export function PageHeader(props: {
  title: ComponentChildren;
  /** What the object is (its id, its status), on a line of its own above the lede. */
  facts?: ComponentChildren;
  children?: ComponentChildren;
}) {
  return (
    <header class="page-header">
      <h1 tabIndex={-1}>{props.title}</h1>
      {props.facts && <p class="page-facts">{props.facts}</p>}
      {props.children && <p class="lede">{props.children}</p>}
    </header>
  );
}

/**
 * Gives focus back to what had it when the component first rendered (the button that opened a
 * dialog or a card): back where the user was, not to the page's start. The returned function
 * does it; it does nothing once that element is gone (a removed row).
 */
export function useFocusReturn(): () => void {
  // read on the first render: the opener still has focus then
  const opener = useRef(document.activeElement);
  return () => {
    const back = opener.current;
    if (back instanceof HTMLElement && back.isConnected) back.focus();
  };
}

/**
 * What a confirmation's button does: `destructive` (red) takes something away — revokes,
 * deletes, blocks, lowers —; `constructive` (the primary colour) adds, as money to a wallet or
 * credits to a user.
 */
export type ConfirmTone = 'destructive' | 'constructive';

/**
 * A modal confirmation (the native dialog: focus stays inside, Escape cancels) whose button
 * runs one write. While it runs the button is busy; if it fails, its error shows in the dialog,
 * which stays open; once it succeeded, `onDone` hears its answer. Closed, it gives focus back to
 * what had it when it opened.
 */
export function Confirm<T>(props: {
  title: ComponentChildren;
  children: ComponentChildren;
  confirmLabel: string;
  /** Default `destructive`. */
  tone?: ConfirmTone;
  write(): Promise<T>;
  onDone(answer: T): void;
  onCancel(): void;
}) {
  const dialog = useRef<HTMLDialogElement>(null);
  const returnFocus = useFocusReturn();
  const action = useAction();
  useEffect(() => {
    const element = dialog.current;
    if (element && !element.open) element.showModal();
    return () => {
      element?.close();
      returnFocus();
    };
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
      <ErrorNote error={action.error} />
      <div class="actions">
        <button type="button" class="secondary" onClick={props.onCancel}>
          Cancel
        </button>
        <button
          type="button"
          class={props.tone === 'constructive' ? undefined : 'danger'}
          disabled={action.busy}
          onClick={() => {
            void action.run(props.write).then((done) => done && props.onDone(done.value));
          }}
        >
          {action.busy ? 'Working…' : props.confirmLabel}
        </button>
      </div>
    </dialog>
  );
}

/** Figures or settings, each a term and its value on one line (a card's, a confirmation's). */
export function Facts({ children }: { children: ComponentChildren }) {
  return <dl class="facts">{children}</dl>;
}

export function Fact({ term, children }: { term: string; children: ComponentChildren }) {
  return (
    <div>
      <dt>{term}</dt>
      <dd>{children}</dd>
    </div>
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
      <span class="amount">{exactAmount(value)}</span> <span class="currency">{currency}</span>
    </span>
  );
}

/** A count in a stat card (`StatFigure`): one line, never broken. */
export function Count({ value }: { value: number | null }) {
  return <span class="count">{value === null ? '…' : value.toLocaleString()}</span>;
}

/**
 * The figure of a stat card, fitted to its width: its counts (`Count`) and amounts (`Money`)
 * keep the size of the figures in the cards beside them while their digits fit the card, an
 * amount's currency going under it when the whole line does not (styles.css); only a figure
 * whose digits alone do not fit is made smaller, enough for it (and its currency) to fit on
 * one line, never under 10 px (the longest amount the API takes fits a desktop's card so, and
 * a phone's spend card takes the row). Measured, not estimated from the number of characters:
 * a digit's width depends on the font the browser has. `money` marks a figure of amounts (one
 * per currency, a column).
 */
export function StatFigure(props: { children: ComponentChildren; money?: boolean }) {
  const box = useRef<HTMLSpanElement>(null);
  useLayoutEffect(() => {
    const element = box.current;
    if (!element) return;
    fitFigures(element);
    // the card's width follows the window's; the text's size changes the height only
    let width = element.clientWidth;
    const resized = new ResizeObserver(() => {
      if (element.clientWidth === width) return;
      width = element.clientWidth;
      fitFigures(element);
    });
    resized.observe(element);
    return () => resized.disconnect();
  });
  return (
    <span class={props.money ? 'stat-value money' : 'stat-value'} ref={box}>
      {props.children}
    </span>
  );
}

function fitFigures(box: HTMLElement): void {
  const room = box.clientWidth;
  for (const figure of box.querySelectorAll<HTMLElement>('.money-value, .count')) {
    figure.style.removeProperty('font-size');
    const digits = figure.querySelector<HTMLElement>('.amount') ?? figure;
    const currency = figure.querySelector<HTMLElement>('.currency');
    const width = () => digits.getBoundingClientRect().width;
    if (width() <= room) continue;
    const line =
      width() +
      (currency
        ? (Number.parseFloat(getComputedStyle(figure).columnGap) || 0) +
          currency.getBoundingClientRect().width
        : 0);
    // an amount's currency beside its digits, not at the start of a line of its own
    const fits = currency ? () => currency.offsetLeft > digits.offsetLeft : () => width() <= room;
    // Text does not shrink exactly in proportion (glyphs are fitted to pixels at each size):
    // a step smaller while it does not fit yet.
    for (let scale = Math.floor((room / line) * 100) / 100; scale > 0.3; scale -= 0.01) {
      figure.style.fontSize = `max(0.625rem, ${scale.toFixed(2)}em)`;
      if (fits()) break;
    }
  }
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

/** One column of a DataTable. */
export interface Column<Row> {
  readonly header: ComponentChildren;
  readonly cell: (row: Row) => ComponentChildren;
  /** Right-aligned figures (the header too). */
  readonly numeric?: boolean;
  /** More classes of the cells: `nowrap`, `small`, `details`. */
  readonly class?: string;
  /** The cells name their row (`<th scope="row">`). */
  readonly rowHeader?: boolean;
}

/**
 * A table of rows: a header per column, a cell per column and row, and, with `actions`, a last
 * column of row buttons whose header is read to screen readers only.
 */
export function DataTable<Row>(props: {
  rows: readonly Row[];
  columns: readonly Column<Row>[];
  rowKey(row: Row): string;
  actions?: (row: Row) => ComponentChildren;
  caption?: string;
}) {
  const numeric = (column: Column<Row>) => (column.numeric ? 'num' : undefined);
  return (
    <TableScroller>
      <table>
        {props.caption && <caption class="visually-hidden">{props.caption}</caption>}
        <thead>
          <tr>
            {props.columns.map((column, index) => (
              <th key={index} scope="col" class={numeric(column)}>
                {column.header}
              </th>
            ))}
            {props.actions && (
              <th scope="col">
                <span class="visually-hidden">Actions</span>
              </th>
            )}
          </tr>
        </thead>
        <tbody>
          {props.rows.map((row) => (
            <tr key={props.rowKey(row)}>
              {props.columns.map((column, index) => {
                const classes = [numeric(column), column.class].filter(Boolean).join(' ');
                return column.rowHeader ? (
                  <th key={index} scope="row" class={classes || undefined}>
                    {column.cell(row)}
                  </th>
                ) : (
                  <td key={index} class={classes || undefined}>
                    {column.cell(row)}
                  </td>
                );
              })}
              {props.actions && <td class="row-actions">{props.actions(row)}</td>}
            </tr>
          ))}
        </tbody>
      </table>
    </TableScroller>
  );
}

/**
 * The box a table scrolls sideways in where the window is narrower than the table (a phone).
 * While it does scroll, the keyboard reaches it (a Tab stop, whose arrow keys scroll it) and
 * it is a region named after its table (its caption, else the heading of its section), for a
 * table with nothing focusable in it could not be scrolled without a mouse (WCAG 2.1.1). A box
 * that fits its table is no Tab stop.
 */
export function TableScroller(props: { children: ComponentChildren }) {
  const box = useRef<HTMLDivElement>(null);
  const [name, setName] = useState<string | null>(null);
  useLayoutEffect(() => {
    const element = box.current;
    if (!element) return;
    const measure = () => {
      if (element.scrollWidth <= element.clientWidth) return setName(null);
      const caption = element.querySelector('caption')?.textContent;
      const heading = element
        .closest('section, main')
        ?.querySelector('h1, h2, h3')
        ?.textContent?.trim();
      setName(caption || heading || 'Table');
    };
    measure();
    const observer = new ResizeObserver(measure);
    observer.observe(element);
    if (element.firstElementChild) observer.observe(element.firstElementChild);
    return () => observer.disconnect();
  }, []);
  return (
    <div
      ref={box}
      class="table-wrap"
      tabIndex={name === null ? undefined : 0}
      role={name === null ? undefined : 'region'}
      aria-label={name ?? undefined}
    >
      {props.children}
    </div>
  );
}

/**
 * What a loaded list shows before and around its rows: its error, a loading note, and a note
 * when it is empty.
 */
export function ListState(props: {
  list: Loaded<unknown>;
  rows: readonly unknown[] | null;
  /** What the rows are, plural (`service keys`). */
  what: string;
  empty: ComponentChildren;
}) {
  return (
    <>
      <ErrorNote error={props.list.error} />
      {props.list.loading && <Loading what={props.what} />}
      {props.rows && props.rows.length === 0 && <Empty>{props.empty}</Empty>}
    </>
  );
}

/**
 * A loaded list as the pages show it: its states (ListState), its rows as a table, and, for a
 * paged list, the button that loads more.
 */
export function ListTable<Row>(props: {
  list: Loaded<unknown> | Paged<unknown>;
  /** The rows as shown: the list's, or those reordered or filtered. */
  rows: readonly Row[] | null;
  /** What the rows are, plural (`service keys`): for the loading note and the more button. */
  what: string;
  empty: ComponentChildren;
  columns: readonly Column<Row>[];
  rowKey(row: Row): string;
  actions?: (row: Row) => ComponentChildren;
  caption?: string;
}) {
  const { list, rows, what } = props;
  return (
    <>
      <ListState list={list} rows={rows} what={what} empty={props.empty} />
      {rows && rows.length > 0 && (
        <DataTable
          rows={rows}
          columns={props.columns}
          rowKey={props.rowKey}
          actions={props.actions}
          caption={props.caption}
        />
      )}
      {'more' in list && <MoreButton list={list} what={what} />}
    </>
  );
}

/**
 * A form's name field: its label around a text input of at most 200 characters (the API's
 * limit for the names of apps, connections, keys and credentials), required unless
 * `optional`. `name` is the input's form name.
 */
export function NameField(props: {
  label: string;
  value: string;
  onInput(value: string): void;
  name?: string;
  optional?: boolean;
  class?: string;
}) {
  return (
    <label class={props.class}>
      {props.label}
      <input
        name={props.name}
        required={!props.optional}
        maxLength={200}
        value={props.value}
        onInput={(event) => props.onInput(event.currentTarget.value)}
      />
    </label>
  );
}

/**
 * The e-mail address of the signing-in forms (sign in, sign up, forgot password): the
 * account's username to the browser's password manager.
 */
export function EmailField(props: { value: string; onInput(value: string): void }) {
  return (
    <label>
      E-mail
      <input
        type="email"
        name="email"
        autocomplete="username"
        required
        value={props.value}
        onInput={(event) => props.onInput(event.currentTarget.value)}
      />
    </label>
  );
}

/** A button in a table row: `label` shows, `name` says which row's it is to screen readers. */
export function RowButton(props: {
  label: string;
  name: string;
  danger?: boolean;
  disabled?: boolean;
  onClick(): void;
}) {
  return (
    <button
      type="button"
      class={props.danger ? 'danger secondary' : 'secondary'}
      disabled={props.disabled}
      aria-label={props.name}
      onClick={props.onClick}
    >
      {props.label}
    </button>
  );
}

/** A status word in a coloured pill (the word itself carries the meaning, not the colour). */
export function Status({ value }: { value: string }) {
  return <span class={`status ${value}`}>{value}</span>;
}

/** Text in pieces, a line allowed to break only between two of them. */
function Pieces({ pieces }: { pieces: readonly string[] }) {
  return (
    <>
      {pieces.map((piece, index) => (
        <Fragment key={index}>
          {index > 0 && <wbr />}
          {piece}
        </Fragment>
      ))}
    </>
  );
}

/**
 * A URL that may break across lines only after a `/`, `?`, `&` or `#` (never inside a host
 * name or a path segment), as code.
 */
export function Url({ value }: { value: string }) {
  return (
    <code class="url">
      <Pieces pieces={value.split(/(?<=[/?&#])(?=[^/])/)} />
    </code>
  );
}

/**
 * Where an id (`pu_7Kx…`, an external user id such as `eu-west.acme:team_4/jane.doe@example.com`)
 * may break: after a `/ _ - : ? & # = , |` and before a `. @ + ~`, each between a letter or
 * digit and the next piece, so that a piece never starts or ends with a lone separator.
 */
const ID_BREAKS = /(?<=[/_:?&#=,|-])(?=[\p{L}\p{N}])|(?<=[\p{L}\p{N}])(?=[.@+~])/u;

/**
 * An id as text (in a heading): broken across lines at its separators only, where it does not
 * fit on one (a piece longer than the line still breaks, as the last resort, within it).
 */
export function IdText({ value }: { value: string }) {
  return <Pieces pieces={shownText(value).split(ID_BREAKS)} />;
}

/** An id as code, broken across lines at its separators only (see IdText). */
export function Id({ value }: { value: string }) {
  return (
    <code class="id">
      <IdText value={value} />
    </code>
  );
}

/** An id to copy: the value as code, and a button that copies it (and says so). */
export function CopyText(props: { value: string; label: string }) {
  const [copied, setCopied] = useState<'yes' | 'failed' | null>(null);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(props.value);
      setCopied('yes');
    } catch {
      setCopied('failed');
    }
  };
  return (
    <span class="copy-text">
      <Id value={props.value} />{' '}
      <button
        type="button"
        class="secondary small-button"
        aria-label={`Copy ${props.label}`}
        onClick={() => void copy()}
      >
        Copy
      </button>{' '}
      <span class="muted small" role="status" aria-live="polite">
        {copied === 'yes' && 'Copied.'}
        {copied === 'failed' && 'The browser did not allow copying: select it and copy.'}
      </span>
    </span>
  );
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
  /** More about the value, under it (what to know about a new key). */
  children?: ComponentChildren;
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
      {props.children}
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
