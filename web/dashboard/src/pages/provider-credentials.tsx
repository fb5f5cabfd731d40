// Provider credentials (bring your own key): the organization's vendor keys by fingerprint —
// never the secret —, adding one (checked with the vendor first), its priority, model policy,
// routing mode and connection grants, disabling and deleting it. A policy naming a model the
// catalogue lacks, or a credential left granted to no connection (it then serves nothing:
// decision 456), is stored with the API's warnings, shown where it was written; a row granted
// to no connection says it serves no request.
import { useState } from 'preact/hooks';
import { api, canManage, type OrgSummary } from '../api.js';
import { ConnectionChecklist } from '../connection-picker.js';
import { useAction, useEditedField, useLoad, useNotice, usePaged } from '../hooks.js';
import { connectionLabel, useConnectionsById, type OrgConnection } from '../org-data.js';
import type { CredentialRow, ModelRow, WrittenCredential } from '../types.js';
import {
  Confirm,
  EditCardActions,
  ErrorNote,
  ListTable,
  NameField,
  PageHeader,
  RowButton,
  Status,
} from '../ui.js';
import { modelPolicyOf } from './model-policy.js';
import type { OrgPage } from './page.js';
import { PolicyWarnings } from './policy-warnings.js';

export const providerCredentialsPage: OrgPage = {
  section: 'provider-credentials',
  label: 'Provider credentials',
  Component: ({ org }) => <CredentialsPage org={org} />,
};

const ROUTING_MODES = [
  {
    value: 'byok_first',
    label: 'Your key first',
    hint: 'gw’s own route serves when none of your keys can.',
  },
  {
    value: 'byok_only',
    label: 'Your key only',
    hint: 'Requests fail rather than use gw’s own route.',
  },
] as const;

/** A routing mode in the words the form offers it with (the API's value if it is a new one). */
const routingLabel = (value: string): string =>
  ROUTING_MODES.find((mode) => mode.value === value)?.label ?? value;

/** `vendor_a/*, vendor_a/model-x` as the API's list (empty: the provider's default). */
type Change = { credential: CredentialRow; action: 'disable' | 'enable' | 'delete' };

function CredentialsPage({ org }: { org: OrgSummary }) {
  const base = `/dashboard/api/orgs/${encodeURIComponent(org.id)}/credentials`;
  const list = usePaged<CredentialRow>(`${base}?limit=200`);
  const manage = canManage(org.role);
  const [added, setAdded] = useState<WrittenCredential | null>(null);
  const [change, setChange] = useState<Change | null>(null);
  const [editing, setEditing] = useState<string | null>(null);
  const rows = list.data?.filter((credential) => credential.status !== 'deleted') ?? null;
  // the connections the credentials are granted to, looked up by id (decision 300)
  const connections = useConnectionsById(
    org.id,
    rows?.flatMap((credential) => credential.app_connection_ids) ?? [],
  );
  return (
    <>
      <PageHeader title="Provider credentials">
        Your own vendor keys: requests of the connections you grant a key to are served with it and
        cost your wallet nothing. gw stores each key sealed and shows only its fingerprint.
      </PageHeader>
      {added && (
        <p class="card ok" role="status">
          Added <strong>{added.name}</strong>: the vendor accepted the key. Its fingerprint is{' '}
          <code>{added.fingerprint}</code>; the key itself is never shown again.
        </p>
      )}
      {added && <CredentialWarnings notice={noticeOf(added)} done="Added" inCard={false} />}
      {manage && (
        <AddCredential
          base={base}
          orgId={org.id}
          onAdded={(credential) => {
            setAdded(credential);
            list.reload();
          }}
        />
      )}
      <section aria-labelledby="credentials-heading">
        <h2 id="credentials-heading">Credentials</h2>
        <ErrorNote error={connections.error} />
        <ListTable
          list={list}
          rows={rows}
          what="credentials"
          empty="No provider credentials yet."
          rowKey={(credential) => `${credential.id}-${credential.status}`}
          columns={[
            { header: 'Name', class: 'breakable name', cell: (credential) => credential.name },
            { header: 'Provider', cell: (credential) => <code>{credential.provider}</code> },
            {
              header: 'Fingerprint',
              class: 'fingerprint',
              cell: (credential) => <Fingerprint value={credential.fingerprint} />,
            },
            { header: 'Priority', numeric: true, cell: (credential) => credential.priority },
            {
              header: 'Routing',
              class: 'nowrap',
              cell: (credential) => routingLabel(credential.routing_mode),
            },
            {
              header: 'Models',
              class: 'small',
              cell: (credential) =>
                credential.model_policy.map((pattern) => <code key={pattern}>{pattern} </code>),
            },
            {
              header: 'Connections',
              class: 'small',
              cell: (credential) =>
                credential.app_connection_ids.length === 0 ? (
                  <span class="cell-warning">None: serves no request</span>
                ) : (
                  <ul class="cell-list">
                    {credential.app_connection_ids.map((id) => (
                      <li key={id}>{connectionLabel(connections.data, id)}</li>
                    ))}
                  </ul>
                ),
            },
            { header: 'Status', cell: (credential) => <Status value={credential.status} /> },
          ]}
          actions={(credential) => {
            if (!manage) return null;
            const toggle = credential.status === 'active' ? 'disable' : 'enable';
            return (
              <>
                <RowButton
                  label="Edit"
                  name={`Edit ${credential.name}`}
                  onClick={() => setEditing(editing === credential.id ? null : credential.id)}
                />{' '}
                <RowButton
                  label={toggle === 'disable' ? 'Disable…' : 'Enable…'}
                  name={`${toggle === 'disable' ? 'Disable' : 'Enable'} ${credential.name}`}
                  onClick={() => setChange({ credential, action: toggle })}
                />{' '}
                <RowButton
                  label="Delete…"
                  name={`Delete ${credential.name}`}
                  danger
                  onClick={() => setChange({ credential, action: 'delete' })}
                />
              </>
            );
          }}
        />
      </section>
      {manage && editing && rows?.find((row) => row.id === editing) && (
        <EditCredential
          key={editing}
          credential={rows.find((row) => row.id === editing)!}
          orgId={org.id}
          known={connections.data}
          onChanged={list.reload}
          onClose={() => setEditing(null)}
        />
      )}
      {change && (
        <ChangeCredential
          change={change}
          onClose={() => setChange(null)}
          onChanged={() => {
            setChange(null);
            list.reload();
          }}
        />
      )}
    </>
  );
}

/** What a write of a credential warned of, and whether it left it granted to no connection. */
interface WriteNotice {
  readonly warnings: readonly string[];
  readonly ungranted: boolean;
}

const noticeOf = (written: WrittenCredential): WriteNotice => ({
  warnings: written.warnings,
  ungranted: written.app_connection_ids.length === 0,
});

/**
 * The API's warnings about a credential just written, with what to do about each kind: the
 * credential granted to no connection (the API's first warning then), and models of its policy
 * the catalogue does not list yet.
 */
function CredentialWarnings(props: {
  notice: WriteNotice;
  done: string;
  /** Shown in the credential's edit card (its connections are there), or above the list. */
  inCard: boolean;
}) {
  const { warnings, ungranted } = props.notice;
  const aboutModels = warnings.length > (ungranted ? 1 : 0);
  return (
    <PolicyWarnings
      warnings={warnings}
      done={props.done}
      {...(!ungranted && { about: 'its allowed models' })}
    >
      {ungranted &&
        (props.inCard
          ? 'Tick the connections it should serve under Connections it serves. '
          : 'Grant it to the connections it should serve: Edit, then Connections it serves. ')}
      {aboutModels &&
        (props.inCard
          ? 'The ids gw serves are listed under Models & prices.'
          : 'The ids gw serves are listed under Models & prices; to change its models, edit it below.')}
    </PolicyWarnings>
  );
}

/**
 * `sha256:…` on one line where the table has room, else broken after its prefix: the table
 * then fits a laptop's screen (1280 px) with its buttons inside it.
 */
function Fingerprint({ value }: { value: string }) {
  const colon = value.indexOf(':') + 1;
  return (
    <code>
      {value.slice(0, colon)}
      <wbr />
      {value.slice(colon)}
    </code>
  );
}

function AddCredential(props: {
  base: string;
  orgId: string;
  onAdded(credential: WrittenCredential): void;
}) {
  // The providers are the prefixes of the routable models' ids (`vendor_a/…`).
  const models = useLoad<{ data: ModelRow[] }>('/models');
  const providers = [
    ...new Set(models.data?.data.map((model) => model.id.split('/')[0] ?? '') ?? []),
  ]
    .filter((id) => id !== '')
    .sort();
  const [provider, setProvider] = useState('');
  const [name, setName] = useState('');
  const [secret, setSecret] = useState('');
  const [priority, setPriority] = useState('1');
  const [routing, setRouting] = useState<string>('byok_first');
  const [policy, setPolicy] = useState('');
  const [grants, setGrants] = useState<string[]>([]);
  // the chosen connections, kept to show them while a search lists others
  const [picked, setPicked] = useState<ReadonlyMap<string, OrgConnection>>(new Map());
  // each credential added starts a new checklist: its search box empty, its list unfiltered
  const [addedCount, setAddedCount] = useState(0);
  const action = useAction();
  const chosen = provider || providers[0] || '';
  return (
    <form
      class="card"
      aria-labelledby="add-credential-heading"
      onSubmit={action.submit(
        () => {
          const patterns = modelPolicyOf(policy);
          const body = {
            provider: chosen,
            name: name.trim(),
            secret,
            priority: Number(priority),
            routing_mode: routing,
            app_connection_ids: grants,
            ...(patterns.length > 0 && { model_policy: patterns }),
          };
          // The secret leaves the form whatever the answer: it is never kept or shown again.
          setSecret('');
          return api.create<WrittenCredential>(props.base, body);
        },
        (created) => {
          props.onAdded(created);
          setName('');
          setPolicy('');
          setGrants([]);
          setPicked(new Map());
          setAddedCount((count) => count + 1);
        },
      )}
    >
      <h2 id="add-credential-heading">Add a credential</h2>
      <p class="muted small">
        gw checks the key with the vendor before storing it: a key the vendor refuses is not stored.
      </p>
      <div class="row">
        <label>
          Provider
          <select
            name="credential-provider"
            value={chosen}
            onChange={(event) => setProvider(event.currentTarget.value)}
          >
            {providers.map((id) => (
              <option key={id} value={id}>
                {id}
              </option>
            ))}
          </select>
        </label>
        <NameField label="Name" name="credential-name" value={name} onInput={setName} />
        <label class="grow">
          Vendor API key
          <input
            name="credential-secret"
            type="password"
            autoComplete="off"
            required
            spellcheck={false}
            value={secret}
            onInput={(event) => setSecret(event.currentTarget.value)}
          />
        </label>
      </div>
      <div class="row">
        <label>
          Priority (1 is tried first)
          <input
            name="credential-priority"
            type="number"
            min={1}
            max={1000}
            required
            value={priority}
            onInput={(event) => setPriority(event.currentTarget.value)}
          />
        </label>
        <RoutingSelect name="credential-routing" value={routing} onChange={setRouting} />
        <label class="grow">
          Models it serves (empty: all of the provider’s)
          <input
            name="credential-model-policy"
            placeholder={`${chosen || 'vendor'}/*`}
            value={policy}
            onInput={(event) => setPolicy(event.currentTarget.value)}
          />
        </label>
      </div>
      <ConnectionChecklist
        key={addedCount}
        orgId={props.orgId}
        legend="Connections it serves"
        chosen={grants}
        known={picked}
        none="No active connections yet: grant it later."
        onToggle={(connection, on) => {
          setPicked((current) => new Map(current).set(connection.id, connection));
          setGrants((current) =>
            on ? [...current, connection.id] : current.filter((id) => id !== connection.id),
          );
        }}
      />
      <ErrorNote error={action.error ?? models.error} />
      <button type="submit" disabled={action.busy || chosen === ''}>
        {action.busy ? 'Checking with the vendor…' : 'Add credential'}
      </button>
    </form>
  );
}

function RoutingSelect(props: { name: string; value: string; onChange(value: string): void }) {
  return (
    <label>
      Routing
      <select
        name={props.name}
        value={props.value}
        onChange={(event) => props.onChange(event.currentTarget.value)}
      >
        {ROUTING_MODES.map((mode) => (
          <option key={mode.value} value={mode.value}>
            {mode.label}
          </option>
        ))}
      </select>
      <span class="hint">{ROUTING_MODES.find((mode) => mode.value === props.value)?.hint}</span>
    </label>
  );
}

function EditCredential(props: {
  credential: CredentialRow;
  orgId: string;
  /** The connections the credentials are granted to (looked up by the page). */
  known: ReadonlyMap<string, OrgConnection> | null;
  onChanged(): void;
  onClose(): void;
}) {
  const { credential } = props;
  const path = `/dashboard/api/credentials/${encodeURIComponent(credential.id)}`;
  // each field follows the loaded credential until edited; a save writes the edited ones only
  const name = useEditedField(credential.name);
  const priority = useEditedField(String(credential.priority));
  const routing = useEditedField(credential.routing_mode);
  const policy = useEditedField(credential.model_policy.join(', '));
  // saved: the warnings the answer had (none: the "Saved." note alone)
  const [saved, setSaved] = useNotice<WriteNotice>();
  // the warnings the answer of a grant's change had (none granted left)
  const [granted, setGranted] = useNotice<WriteNotice>();
  const action = useAction();
  const grant = useAction();
  return (
    <section class="card" aria-labelledby="edit-credential-heading">
      <h2 id="edit-credential-heading">Edit {credential.name}</h2>
      <form
        onInput={() => {
          action.clear();
          setSaved(null);
        }}
        onSubmit={action.submit(
          () => {
            setSaved(null);
            const changes = {
              ...(name.changed &&
                name.value.trim() !== credential.name && { name: name.value.trim() }),
              ...(priority.changed && { priority: Number(priority.value) }),
              ...(routing.changed && { routing_mode: routing.value }),
              ...(policy.changed && { model_policy: modelPolicyOf(policy.value) }),
            };
            return Object.keys(changes).length === 0
              ? Promise.resolve(null)
              : api.patch<WrittenCredential>(path, changes);
          },
          (changed) => {
            setSaved(changed ? noticeOf(changed) : { warnings: [], ungranted: false });
            grant.clear();
            props.onChanged();
          },
        )}
      >
        <div class="row">
          <NameField
            label="Name"
            name="edit-credential-name"
            value={name.value}
            onInput={name.set}
          />
          <label>
            Priority (1 is tried first)
            <input
              name="edit-credential-priority"
              type="number"
              min={1}
              max={1000}
              required
              value={priority.value}
              onInput={(event) => priority.set(event.currentTarget.value)}
            />
          </label>
          <RoutingSelect
            name="edit-credential-routing"
            value={routing.value}
            onChange={routing.set}
          />
          <label class="grow">
            Models it serves
            <input
              name="edit-credential-model-policy"
              required
              value={policy.value}
              onInput={(event) => policy.set(event.currentTarget.value)}
            />
          </label>
        </div>
        <ErrorNote error={action.error} />
        <EditCardActions
          busy={action.busy}
          saveLabel="Save changes"
          saved={saved ? 'Saved. Every gateway instance uses it for its next request.' : null}
          onClose={props.onClose}
        />
        {saved && <CredentialWarnings notice={saved} done="Saved" inCard />}
      </form>
      <ConnectionChecklist
        orgId={props.orgId}
        legend="Connections it serves (a change applies at once)"
        chosen={credential.app_connection_ids}
        known={props.known}
        disabled={grant.busy}
        none="No active connections."
        onToggle={(connection, on) => {
          const url = `${path}/grants/${encodeURIComponent(connection.id)}`;
          void grant
            .run(() => (on ? api.put<WrittenCredential>(url) : api.delete<WrittenCredential>(url)))
            .then((done) => {
              if (done) {
                action.clear();
                setGranted(noticeOf(done.value));
              }
              props.onChanged();
            });
        }}
      />
      <ErrorNote error={grant.error} />
      {granted && <CredentialWarnings notice={granted} done="Saved" inCard />}
    </section>
  );
}

function ChangeCredential(props: { change: Change; onClose(): void; onChanged(): void }) {
  const { credential, action: verb } = props.change;
  const path = `/dashboard/api/credentials/${encodeURIComponent(credential.id)}`;
  const titles = { disable: 'Disable', enable: 'Enable', delete: 'Delete' } as const;
  return (
    <Confirm
      title={`${titles[verb]} ${credential.name}?`}
      confirmLabel={`${titles[verb]} credential`}
      tone={verb === 'enable' ? 'constructive' : 'destructive'}
      write={() =>
        verb === 'delete'
          ? api.delete(path)
          : api.patch(path, { status: verb === 'disable' ? 'disabled' : 'active' })
      }
      onDone={props.onChanged}
      onCancel={props.onClose}
    >
      <p>
        {verb === 'delete' &&
          'The key is deleted for good and its connection grants are revoked: requests it served go to gw’s own route (or fail, for connections that use your keys only). To use it again, add it anew.'}
        {verb === 'disable' &&
          'Every gateway instance stops using the key at once; it stays listed and can be enabled again.'}
        {verb === 'enable' &&
          'Every gateway instance uses the key again for its granted connections.'}
      </p>
    </Confirm>
  );
}
