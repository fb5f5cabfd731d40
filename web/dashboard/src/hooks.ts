// Loading data: a value, its error and its loading state, and lists that page with a cursor.
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { api, ApiError, type Page } from './api.js';

export interface Loaded<T> {
  readonly data: T | null;
  readonly error: ApiError | null;
  readonly loading: boolean;
  reload(): void;
}

export function useLoad<T>(path: string | null): Loaded<T> {
  return useAsync<T>(path === null ? null : () => api.get<T>(path), path);
}

/**
 * Runs `load` whenever `key` changes (null: nothing to load). What was loaded for another key
 * is never returned: while the new key loads, and with no key, there is no data (no stale
 * figures under new settings).
 */
export function useAsync<T>(load: (() => Promise<T>) | null, key: string | null): Loaded<T> {
  const [state, setState] = useState<{
    key: string | null;
    data: T | null;
    error: ApiError | null;
    loading: boolean;
  }>({ key, data: null, error: null, loading: load !== null });
  const [generation, setGeneration] = useState(0);
  useEffect(() => {
    if (load === null) {
      setState({ key, data: null, error: null, loading: false });
      return;
    }
    let current = true;
    setState((previous) => ({ ...previous, loading: true, error: null }));
    load().then(
      (data) => current && setState({ key, data, error: null, loading: false }),
      (error: unknown) =>
        current && setState({ key, data: null, error: asApiError(error), loading: false }),
    );
    return () => {
      current = false;
    };
    // `key` stands for `load`: a new function each render, the same work while key is the same.
  }, [key, generation]);
  const reload = useCallback(() => setGeneration((value) => value + 1), []);
  const fresh = state.key === key;
  return {
    data: fresh ? state.data : null,
    error: fresh ? state.error : null,
    loading: load !== null && (!fresh || state.loading),
    reload,
  };
}

export interface Paged<Row, Extra = unknown> extends Loaded<Row[]> {
  /** The first page as answered: what a list answer says beside its rows (`Extra`). */
  readonly firstPage: (Page<Row> & Extra) | null;
  readonly hasMore: boolean;
  readonly loadingMore: boolean;
  more(): void;
}

/** A dashboard list: the first page, and the next ones on demand. */
export function usePaged<Row, Extra = unknown>(path: string | null): Paged<Row, Extra> {
  const first = useLoad<Page<Row> & Extra>(path);
  const [extra, setExtra] = useState<{ rows: Row[]; cursor: string | null; busy: boolean }>({
    rows: [],
    cursor: null,
    busy: false,
  });
  const [moreError, setMoreError] = useState<ApiError | null>(null);
  useEffect(() => {
    setExtra({ rows: [], cursor: first.data?.next_cursor ?? null, busy: false });
    setMoreError(null);
  }, [first.data]);
  const more = useCallback(() => {
    if (!path || !extra.cursor || extra.busy) return;
    setExtra((previous) => ({ ...previous, busy: true }));
    const separator = path.includes('?') ? '&' : '?';
    api.get<Page<Row>>(`${path}${separator}cursor=${encodeURIComponent(extra.cursor)}`).then(
      (page) =>
        setExtra((previous) => ({
          rows: [...previous.rows, ...page.data],
          cursor: page.next_cursor,
          busy: false,
        })),
      (error: unknown) => {
        setMoreError(asApiError(error));
        setExtra((previous) => ({ ...previous, busy: false }));
      },
    );
  }, [path, extra.cursor, extra.busy]);
  return {
    data: first.data ? [...first.data.data, ...extra.rows] : null,
    firstPage: first.data,
    error: first.error ?? moreError,
    loading: first.loading,
    reload: first.reload,
    hasMore: extra.cursor !== null,
    loadingMore: extra.busy,
    more,
  };
}

/**
 * The objects a page names by id (a member who made a change, a product user's app), looked
 * up for the ids it shows, each once: an organization may have thousands of members or apps,
 * and a page shows a few. An id not found (or not readable) stays out of the map: the page
 * shows the id itself.
 */
export function useLookup<T>(
  ids: readonly string[],
  pathOf: (id: string) => string,
): ReadonlyMap<string, T> {
  const [found, setFound] = useState<ReadonlyMap<string, T>>(new Map());
  const asked = useRef(new Set<string>());
  const mounted = useRef(true);
  useEffect(
    () => () => {
      mounted.current = false;
    },
    [],
  );
  const wanted = [...new Set(ids)].sort().join('\n');
  useEffect(() => {
    for (const id of wanted === '' ? [] : wanted.split('\n')) {
      if (asked.current.has(id)) continue;
      asked.current.add(id);
      api.get<T>(pathOf(id)).then(
        (value) => mounted.current && setFound((previous) => new Map(previous).set(id, value)),
        () => undefined, // not found (or not readable): shown as its id
      );
    }
    // `wanted` stands for `ids`; `pathOf` is the same for the page's life.
  }, [wanted]);
  return found;
}

/** An error in what the user typed, found before sending it: shown as the API's would be. */
export const invalidInput = (message: string): ApiError =>
  new ApiError(0, 'invalid_input', message);

export function asApiError(error: unknown): ApiError {
  if (error instanceof ApiError) return error;
  return new ApiError(0, 'client', error instanceof Error ? error.message : String(error));
}

/** What a write that succeeded answered. */
export interface Done<T> {
  readonly value: T;
}

/**
 * Runs a write: busy while it runs, its error kept to show. `run` resolves to the write's
 * answer once it succeeded, or to null once it failed (its error is then in `error`).
 * `submit` makes a form's onSubmit that runs the write and hands its answer to `after`.
 * What had focus when the write began (a form's button, disabled while busy, which drops focus
 * to the page) gets it back once the write is over, if it is still shown and nothing else took
 * focus meanwhile: a keyboard user goes on from the button, not from the top of the page.
 */
export function useAction(): {
  busy: boolean;
  error: ApiError | null;
  run<T>(action: () => Promise<T>): Promise<Done<T> | null>;
  submit<T>(write: () => Promise<T>, after: (answer: T) => void): (event: Event) => void;
  /** Shows what is wrong with the form's input (found before anything was sent). */
  refuse(message: string): void;
  clear(): void;
} {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);
  const focused = useRef<HTMLElement | null>(null);
  useEffect(() => {
    if (busy) return;
    const element = focused.current;
    focused.current = null;
    const lost = document.activeElement === null || document.activeElement === document.body;
    // without scrolling: a user who scrolled away during a slow write is not brought back
    if (element?.isConnected && lost) element.focus({ preventScroll: true });
  }, [busy]);
  const run = useCallback(async <T>(action: () => Promise<T>): Promise<Done<T> | null> => {
    const active = document.activeElement;
    focused.current = active instanceof HTMLElement && active !== document.body ? active : null;
    setBusy(true);
    setError(null);
    try {
      return { value: await action() };
    } catch (failure) {
      setError(asApiError(failure));
      return null;
    } finally {
      setBusy(false);
    }
  }, []);
  // A form sent again before its button shows busy (a double click within one frame, Enter
  // held) is not sent twice: the first submission's answer decides.
  const submitting = useRef(false);
  const submit =
    <T>(write: () => Promise<T>, after: (answer: T) => void) =>
    (event: Event): void => {
      event.preventDefault();
      if (submitting.current) return;
      submitting.current = true;
      void run(write)
        .then((done) => done && after(done.value))
        .finally(() => {
          submitting.current = false;
        });
    };
  const refuse = useCallback((message: string) => setError(invalidInput(message)), []);
  const clear = useCallback(() => setError(null), []);
  return { busy, error, run, submit, refuse, clear };
}

/**
 * A success message ("Saved.", "Granted 2.25 USD."): shown until the user's next action on the
 * page (a click on a button, link or menu, typing, sending a form), so that it never sits next
 * to the outcome of a later one.
 */
export function useNotice<T>(): [T | null, (value: T | null) => void] {
  // Each notice set is a new object, even one equal to the notice shown: the clearing an
  // action's own click schedules takes only the notice shown when it was scheduled, not one
  // the action set (again) meanwhile — "Saved." saved again stays.
  const [notice, setNotice] = useState<{ readonly value: T } | null>(null);
  useEffect(() => {
    if (notice === null) return;
    let clearing: ReturnType<typeof setTimeout> | undefined;
    const clear = (event: Event) => {
      const target = event.target;
      if (event.type === 'click' && !(target instanceof Element && target.closest('button, a'))) {
        return;
      }
      // Once the event's own handlers have run: a render in between (the page re-rendered for
      // the cleared notice) would put a field's old value back before its handler read the new
      // one, and the first keystroke after "Saved." would be lost. A notice the handlers set
      // meanwhile is another object: it stays.
      clearing ??= setTimeout(() => setNotice((now) => (now === notice ? null : now)), 0);
    };
    const events = ['click', 'input', 'change', 'submit'] as const;
    for (const type of events) document.addEventListener(type, clear, true);
    return () => {
      clearTimeout(clearing);
      for (const type of events) document.removeEventListener(type, clear, true);
    };
  }, [notice]);
  const set = useCallback((value: T | null) => setNotice(value === null ? null : { value }), []);
  return [notice === null ? null : notice.value, set];
}

/** A form field over a value the page loaded (see useEditedField). */
export interface EditedField<T> {
  readonly value: T;
  set(value: T): void;
  /** The field differs from what was loaded last: the form's write sends it. */
  readonly changed: boolean;
}

/**
 * A form field that starts as the loaded value, follows a reload while the user has not
 * touched it, and says whether it was changed. A form writes only its changed fields (the API
 * keeps what a write leaves out), so saving one setting never writes back the value another
 * admin changed since the page loaded it.
 */
export function useEditedField<T>(loaded: T): EditedField<T> {
  const [value, setValue] = useState(loaded);
  const base = useRef(loaded);
  useEffect(() => {
    if (base.current === loaded) return;
    const untouched = value === base.current;
    base.current = loaded;
    if (untouched) setValue(loaded);
    // only a new loaded value moves the field; `value` is read as this render has it
  }, [loaded]);
  return { value, set: setValue, changed: value !== loaded };
}
