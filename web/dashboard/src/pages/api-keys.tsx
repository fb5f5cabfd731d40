// API keys: a connection's keys (hints only) with their rate limits, issuing one (the raw key
// shown once), changing its rate limits, rotating with an optional grace period, revoking. The
// API lists keys per connection, so the page picks a connection first:
// /orgs/<org>/keys/<connection>. An OAuth connection gets no keys: its token comes from OAuth
// (its limits are changed here too, or on the Connected apps page).
import { useState } from 'preact/hooks';
import { api, canManage, type OrgSummary } from '../api.js';
import { ConnectionSelect } from '../connection-picker.js';
import { invalidInput, useAction, usePaged } from '../hooks.js';
import { connectionName, useConnectionsById, type OrgConnection } from '../org-data.js';
import { navigate, orgView } from '../router.js';
import type { ApiKeyRow, CreatedApiKey, IssuedKey } from '../types.js';
import {
  Confirm,
  Empty,
  ErrorNote,
  formatTime,
  Id,
  Link,
  ListTable,
  NameField,
  PageHeader,
  RowButton,
  ShownOnce,
  Status,
} from '../ui.js';
import { EditLimits, LimitFields, LimitsCell, NO_LIMITS_TYPED } from './key-limits.js';
import { modelPolicyOf } from './model-policy.js';
import type { OrgPage } from './page.js';
import { PolicyWarnings } from './policy-warnings.js';
import { limitsOf, limitsProblem, type TypedLimits } from './request-limits.js';

export const apiKeysPage: OrgPage = {
  section: 'keys',
  label: 'API keys',
  Component: ({ org, id }) => <ApiKeysPage org={org} connectionId={id} />,
};

function ApiKeysPage({ org, connectionId }: { org: OrgSummary; connectionId?: string }) {
  // the connection the path names, looked up by id: it may be past any page of the list
  const found = useConnectionsById(org.id, connectionId ? [connectionId] : []);
  const connection = connectionId ? (found.data?.get(connectionId) ?? null) : null;
  return (
    <>
      <PageHeader title="API keys">
        Keys your apps send to gw. Each belongs to one connection and follows its settings.
      </PageHeader>
      <ErrorNote error={found.error} />
      <ConnectionSelect
        orgId={org.id}
        id="key-connection"
        label="Connection"
        value={connectionId ?? ''}
        current={connection}
        // without a connection in the path, it opens the first active one
        onChange={(id) =>
          navigate(orgView(org.id, 'keys', id), { replace: connectionId === undefined })
        }
        none={
          <Empty>
            A key belongs to a connection, and there is none yet.{' '}
            <Link to={orgView(org.id, 'apps')}>Create an app and a connection</Link> first.
          </Empty>
        }
      />
      {connectionId && found.data && !connection && (
        <p class="error" role="alert">
          This organization has no connection <Id value={connectionId} />.
        </p>
      )}
      {connection && (
        <ConnectionKeys
          key={connection.id}
          orgId={org.id}
          connection={connection}
          manage={canManage(org.role)}
        />
      )}
    </>
  );
}

const keyName = (key: ApiKeyRow): string => key.name ?? key.key_hint;

/** An OAuth connection's token is not an API key: it is not rotated (the app connects again).
 * Its limits are set as a key's: the paying organization throttles the app with them. */
const isApiKey = (key: ApiKeyRow): boolean => key.kind === 'api_key';

function ConnectionKeys(props: { orgId: string; connection: OrgConnection; manage: boolean }) {
  const { connection, manage } = props;
  const base = `/dashboard/api/connections/${encodeURIComponent(connection.id)}/api-keys`;
  const list = usePaged<ApiKeyRow>(`${base}?limit=200`);
  const [issued, setIssued] = useState<{
    title: string;
    key: string;
    /** What the API warned of when it issued the key (models the catalogue lacks). */
    warnings?: readonly string[];
  } | null>(null);
  const [rotating, setRotating] = useState<ApiKeyRow | null>(null);
  const [revoking, setRevoking] = useState<ApiKeyRow | null>(null);
  const [editing, setEditing] = useState<string | null>(null);
  const active = connection.status === 'active';
  // the API refuses keys on an OAuth connection (409): its app holds the token OAuth issued
  const oauth = connection.oauth_client_id !== null;
  const rows = list.data ? [...list.data].reverse() : null; // newest first
  const editable = (key: ApiKeyRow) => manage && key.status === 'active';
  const edited = editing === null ? undefined : rows?.find((key) => key.id === editing);
  return (
    <>
      {issued && (
        <ShownOnce title={issued.title} value={issued.key} onDone={() => setIssued(null)}>
          <PolicyWarnings warnings={issued.warnings ?? []} done="Issued" about="its allowed models">
            The ids gw serves are listed under Models &amp; prices (copy the key first: it is not
            shown again). A key’s models do not change: for others, issue a new key and revoke this
            one.
          </PolicyWarnings>
        </ShownOnce>
      )}
      {active && oauth && (
        <p class="card" role="note">
          This connection was made through OAuth: its token is issued by OAuth when someone connects
          the app, and no API keys are issued on it. To cut the app off, revoke its token below, or
          the app on the <Link to={orgView(props.orgId, 'connected-apps')}>Connected apps</Link>{' '}
          page.
        </p>
      )}
      {manage && active && !oauth && (
        <CreateKey
          base={base}
          onCreated={(key, name) => {
            setIssued({
              title: `Your new API key${name ? ` “${name}”` : ''}`,
              key: key.key,
              warnings: key.warnings,
            });
            list.reload();
          }}
        />
      )}
      {!active && (
        <p class="muted">
          This connection is revoked: its keys no longer work, and it gets no new ones.
        </p>
      )}
      <section aria-labelledby="keys-heading">
        <h2 id="keys-heading">Keys of {connectionName(connection)}</h2>
        <ListTable
          list={list}
          rows={rows}
          what="keys"
          empty={`No keys yet. ${manage && active && !oauth ? 'Issue one above.' : ''}`}
          rowKey={(key) => `${key.id}-${key.status}-${key.expires_at ?? ''}`}
          columns={[
            {
              header: 'Name',
              class: 'breakable name',
              cell: (key) => key.name ?? <span class="muted">unnamed</span>,
            },
            { header: 'Key', class: 'nowrap', cell: (key) => <code>{key.key_hint}</code> },
            {
              header: 'Status',
              cell: (key) => (
                <>
                  <Status value={key.status} />
                  {key.status === 'active' && key.expires_at && (
                    <span class="small muted"> until {formatTime(key.expires_at)}</span>
                  )}
                  {key.replaced_by && <span class="small muted"> · rotated</span>}
                </>
              ),
            },
            {
              header: 'Rate limits',
              class: 'small',
              cell: (key) => (
                <LimitsCell
                  limits={key}
                  name={keyName(key)}
                  editing={editing === key.id}
                  onEdit={
                    editable(key) ? () => setEditing(editing === key.id ? null : key.id) : null
                  }
                />
              ),
            },
            {
              header: 'Models',
              class: 'small',
              cell: (key) =>
                key.model_policy.map((pattern) => <code key={pattern}>{pattern}</code>),
            },
            { header: 'Created', class: 'nowrap', cell: (key) => formatTime(key.created_at) },
          ]}
          actions={(key) =>
            manage &&
            key.status === 'active' && (
              <>
                {!key.replaced_by && isApiKey(key) && (
                  <RowButton
                    label="Rotate…"
                    name={`Rotate ${keyName(key)}`}
                    onClick={() => setRotating(key)}
                  />
                )}{' '}
                <RowButton
                  label="Revoke…"
                  name={`Revoke ${keyName(key)}`}
                  danger
                  onClick={() => setRevoking(key)}
                />
              </>
            )
          }
        />
      </section>
      {edited && editable(edited) && (
        <EditLimits
          key={edited.id}
          limited={edited}
          name={keyName(edited)}
          onSaved={list.reload}
          onClose={() => setEditing(null)}
        />
      )}
      {rotating && (
        <RotateKey
          apiKey={rotating}
          onClose={() => setRotating(null)}
          onRotated={(key) => {
            setRotating(null);
            setIssued({ title: `The new key replacing ${rotating.key_hint}`, key: key.key });
            list.reload();
          }}
        />
      )}
      {revoking && (
        <RevokeKey
          apiKey={revoking}
          onClose={() => setRevoking(null)}
          onRevoked={() => {
            setRevoking(null);
            list.reload();
          }}
        />
      )}
    </>
  );
}

function CreateKey(props: { base: string; onCreated(key: CreatedApiKey, name: string): void }) {
  const [name, setName] = useState('');
  const [policy, setPolicy] = useState('');
  const [limits, setLimits] = useState<TypedLimits>(NO_LIMITS_TYPED);
  const action = useAction();
  return (
    <form
      class="card"
      aria-labelledby="create-key-heading"
      onInput={() => action.clear()}
      onSubmit={action.submit(
        () => {
          const problem = limitsProblem(limits);
          if (problem) throw invalidInput(problem);
          const patterns = modelPolicyOf(policy);
          const { requests_per_minute, product_user_requests_per_minute } = limitsOf(limits);
          return api.create<CreatedApiKey>(props.base, {
            ...(name.trim() && { name: name.trim() }),
            ...(patterns.length > 0 && { model_policy: patterns }),
            ...(requests_per_minute !== null && { requests_per_minute }),
            ...(product_user_requests_per_minute !== null && { product_user_requests_per_minute }),
          });
        },
        (created) => {
          props.onCreated(created, name.trim());
          setName('');
          setPolicy('');
          setLimits(NO_LIMITS_TYPED);
        },
      )}
    >
      <h2 id="create-key-heading">Issue an API key</h2>
      <div class="row top">
        <NameField
          label="Key name (optional)"
          name="key-name"
          optional
          value={name}
          onInput={setName}
        />
        <div class="field">
          <label for="key-policy">Allowed models (optional)</label>
          <input
            id="key-policy"
            name="key-policy"
            aria-describedby="key-policy-hint"
            placeholder="vendor_b/*, vendor_a/claude-sonnet-4-5"
            value={policy}
            onInput={(event) => setPolicy(event.currentTarget.value)}
          />
          <span class="hint" id="key-policy-hint">
            Comma-separated: <code>*</code>, <code>vendor/*</code> or a model id. Empty: every
            vendor’s default models.
          </span>
        </div>
      </div>
      <LimitFields idPrefix="key" value={limits} onChange={setLimits} />
      <ErrorNote error={action.error} />
      <button type="submit" disabled={action.busy}>
        {action.busy ? 'Issuing…' : 'Issue key'}
      </button>
    </form>
  );
}

const GRACE_CHOICES = [
  { seconds: 0, label: 'at once' },
  { seconds: 300, label: 'in 5 minutes' },
  { seconds: 3600, label: 'in 1 hour' },
  { seconds: 86_400, label: 'in 24 hours' },
] as const;

function RotateKey(props: { apiKey: ApiKeyRow; onClose(): void; onRotated(key: IssuedKey): void }) {
  const [grace, setGrace] = useState(0);
  const when = GRACE_CHOICES.find((choice) => choice.seconds === grace)?.label ?? 'at once';
  return (
    <Confirm
      title={`Rotate ${keyName(props.apiKey)}?`}
      confirmLabel="Rotate key"
      write={() =>
        api.post<IssuedKey>(
          `/dashboard/api/api-keys/${encodeURIComponent(props.apiKey.id)}/rotate`,
          { grace_seconds: grace },
        )
      }
      onDone={props.onRotated}
      onCancel={props.onClose}
    >
      <p>
        gw issues a new key with the same connection, name, models and rate limits, and shows it
        once. On every gateway instance, the old key <code>{props.apiKey.key_hint}</code> stops
        working <strong>{when}</strong>.
      </p>
      <div class="field">
        <label for="rotate-grace">The old key stops working</label>
        <select
          id="rotate-grace"
          value={String(grace)}
          onChange={(event) => setGrace(Number(event.currentTarget.value))}
        >
          {GRACE_CHOICES.map((choice) => (
            <option key={choice.seconds} value={String(choice.seconds)}>
              {choice.label}
            </option>
          ))}
        </select>
      </div>
    </Confirm>
  );
}

function RevokeKey(props: { apiKey: ApiKeyRow; onClose(): void; onRevoked(): void }) {
  return (
    <Confirm
      title={`Revoke ${keyName(props.apiKey)}?`}
      confirmLabel="Revoke key"
      write={() =>
        api.post(`/dashboard/api/api-keys/${encodeURIComponent(props.apiKey.id)}/revoke`)
      }
      onDone={props.onRevoked}
      onCancel={props.onClose}
    >
      <p>
        Requests with <code>{props.apiKey.key_hint}</code> are refused on every gateway instance
        within a second. A revoked key cannot be brought back: apps using it need a new key.
      </p>
    </Confirm>
  );
}
