// Choosing among the organization's connections, which may be thousands: a search by the start
// of the connection's or its app's name, a page (200) at a time with more on demand, and the
// chosen ones shown whether or not the page holds them (decision 300).
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { usePaged, type Paged } from './hooks.js';
import { connectionName, orgConnectionsPath, type OrgConnection } from './org-data.js';
import { ErrorNote, Loading } from './ui.js';

/** What the search box holds, and what is searched: the same once typing pauses. */
function useSearch(orgId: string, status: 'active' | undefined) {
  const [typed, setTyped] = useState('');
  const [q, setQ] = useState('');
  useEffect(() => {
    const timer = setTimeout(() => setQ(typed.trim()), 250);
    return () => clearTimeout(timer);
  }, [typed]);
  const list = usePaged<OrgConnection>(orgConnectionsPath(orgId, { q, status }));
  return { typed, setTyped, q, list };
}

/** The search box, labelled like the form's other fields. */
function SearchBox(props: { typed: string; onInput(text: string): void }) {
  return (
    <label class="connection-search">
      Find a connection by name
      <input
        type="search"
        placeholder="Start of its app’s or its own name"
        value={props.typed}
        onInput={(event) => props.onInput(event.currentTarget.value)}
        // Enter searches (it already did): it must not submit the form around the picker
        onKeyDown={(event) => event.key === 'Enter' && event.preventDefault()}
      />
    </label>
  );
}

function PageNote(props: { list: Paged<OrgConnection>; q: string; what: string }) {
  const { list } = props;
  if (!list.data) return null;
  if (list.data.length === 0 && props.q) {
    return (
      <p class="muted small">
        No {props.what} whose name or app’s name starts with “{props.q}”.
      </p>
    );
  }
  if (!list.hasMore) return null;
  return (
    <p class="muted small">
      The first {list.data.length.toLocaleString()} {props.what}
      {props.q ? ` starting with “${props.q}”` : ''}: type a name to find another, or{' '}
      <button type="button" class="link" disabled={list.loadingMore} onClick={list.more}>
        {list.loadingMore ? 'loading…' : 'show more'}
      </button>
      .
    </p>
  );
}

/**
 * A select of connections with a search box. With no connection chosen (`value` empty), it
 * chooses the first active one of the list (else its first) once the list is loaded.
 */
export function ConnectionSelect(props: {
  orgId: string;
  id: string;
  name?: string;
  label: string;
  status?: 'active';
  value: string;
  /** The chosen connection, when the page knows it (it may be past the loaded pages). */
  current: OrgConnection | null;
  onChange(id: string): void;
  /** Shown instead when the organization has no connection to choose. */
  none: ComponentChildren;
}) {
  const { typed, setTyped, q, list } = useSearch(props.orgId, props.status);
  const rows = list.data;
  // the one chosen here stays an option while a search lists others
  const [picked, setPicked] = useState<OrgConnection | null>(null);
  const choose = (row: OrgConnection) => {
    setPicked(row);
    props.onChange(row.id);
  };
  useEffect(() => {
    if (props.value || q || !rows) return;
    const first = rows.find((row) => row.status === 'active') ?? rows[0];
    if (first) choose(first);
  }, [rows, props.value, q]);
  const current = props.current ?? (picked?.id === props.value ? picked : null);
  if (!rows && list.loading && !q) return <Loading what="connections" />;
  if (rows && rows.length === 0 && !q && !typed) return <>{props.none}</>;
  const options = [
    ...(current && !rows?.some((row) => row.id === current.id) ? [current] : []),
    ...(rows ?? []),
  ];
  const apps = [...new Set(options.map((row) => row.app_name))];
  return (
    <div class="field picker">
      <label for={props.id}>{props.label}</label>
      <select
        id={props.id}
        name={props.name}
        value={props.value}
        onChange={(event) => {
          const row = options.find((option) => option.id === event.currentTarget.value);
          if (row) choose(row);
        }}
      >
        {!options.some((row) => row.id === props.value) && (
          <option value={props.value} disabled>
            {props.value ? props.value : 'Choose a connection'}
          </option>
        )}
        {apps.map((app) => (
          <optgroup key={app} label={app}>
            {options
              .filter((row) => row.app_name === app)
              .map((row) => (
                <option key={row.id} value={row.id}>
                  {connectionName(row)}
                  {row.status === 'revoked' ? ' (revoked)' : ''}
                </option>
              ))}
          </optgroup>
        ))}
      </select>
      <SearchBox typed={typed} onInput={setTyped} />
      <ErrorNote error={list.error} />
      <PageNote list={list} q={q} what="connections" />
    </div>
  );
}

/**
 * Checkboxes over the organization's active connections, found by name: the chosen ones
 * (`chosen`, known by `known`) first when the list does not show them, then the list's page.
 */
export function ConnectionChecklist(props: {
  orgId: string;
  legend: string;
  chosen: readonly string[];
  known: ReadonlyMap<string, OrgConnection> | null;
  disabled?: boolean;
  onToggle(connection: OrgConnection, on: boolean): void;
  none: string;
}) {
  const { typed, setTyped, q, list } = useSearch(props.orgId, 'active');
  const rows = list.data ?? [];
  const shown = new Set(rows.map((row) => row.id));
  const chosenElsewhere = props.chosen.flatMap((id) => {
    const connection = props.known?.get(id);
    return connection && !shown.has(id) ? [connection] : [];
  });
  const all = [...chosenElsewhere, ...rows];
  return (
    <fieldset>
      <legend>{props.legend}</legend>
      <SearchBox typed={typed} onInput={setTyped} />
      {list.loading && <Loading what="connections" />}
      {list.data && all.length === 0 && !q && <p class="muted small">{props.none}</p>}
      {all.map((connection) => (
        <label class="check" key={connection.id}>
          <input
            type="checkbox"
            disabled={props.disabled}
            checked={props.chosen.includes(connection.id)}
            onChange={(event) => props.onToggle(connection, event.currentTarget.checked)}
          />
          {connectionName(connection)}
        </label>
      ))}
      <ErrorNote error={list.error} />
      <PageNote list={list} q={q} what="active connections" />
    </fieldset>
  );
}
