// Webhooks: the organization's endpoints (admins and owners only: the API refuses others),
// adding one (its whsec_ signing secret shown once), enabling and disabling, rotating the
// secret, a test event, the delivery log and sending messages again.
import { useState } from 'preact/hooks';
import { api, canManage, type OrgSummary } from '../api.js';
import { useAction, usePaged } from '../hooks.js';
import {
  Confirm,
  Empty,
  ErrorNote,
  formatTime,
  Loading,
  MoreButton,
  PageHeader,
  ShownOnce,
  Status,
} from '../ui.js';
import { EVENT_TYPES as ALL_EVENT_TYPES } from '../../../../src/webhooks/events.js';
import type { OrgPage } from './page.js';

export const webhooksPage: OrgPage = {
  section: 'webhooks',
  label: 'Webhooks',
  Component: ({ org }) => <WebhooksPage org={org} />,
};

/**
 * The event types an endpoint can subscribe to: the gateway's own catalogue (docs/webhooks.md
 * describes each), less the test event, which goes to the endpoint it is sent to whatever it
 * subscribes to.
 */
const SUBSCRIBABLE_EVENT_TYPES = ALL_EVENT_TYPES.filter((type) => type !== 'webhook.test');

interface Endpoint {
  readonly id: string;
  readonly url: string;
  readonly description: string;
  readonly event_types: string[];
  readonly status: 'enabled' | 'disabled';
  readonly disabled_reason: 'manual' | 'failing' | 'gone' | null;
  readonly failing_since: string | null;
  readonly last_success_at: string | null;
  readonly previous_secret_expires_at: string | null;
  readonly created_at: string;
}

interface Delivery {
  readonly id: string;
  readonly message_id: string;
  readonly event_type: string;
  readonly status: 'pending' | 'delivered' | 'failed';
  readonly attempt_count: number;
  readonly next_attempt_at: string | null;
  readonly last_attempt_at: string | null;
  readonly created_at: string;
  readonly attempts: {
    readonly attempted_at: string;
    readonly status_code: number | null;
    readonly latency_ms: number;
    readonly error: string | null;
  }[];
}

type Change = { endpoint: Endpoint; action: 'disable' | 'enable' | 'delete' | 'rotate' };

const SECRET_WARNING =
  'Your receiver needs it to check the signature of each delivery. If it is lost, rotate the secret.';

function WebhooksPage({ org }: { org: OrgSummary }) {
  const manage = canManage(org.role);
  return (
    <>
      <PageHeader title="Webhooks">
        Endpoints gw notifies of events such as a cap or a credit running low, signed with the
        endpoint’s secret (see the webhooks guide).
      </PageHeader>
      {manage ? (
        <Endpoints org={org} />
      ) : (
        <p class="muted">Only admins and owners of this organization manage its webhooks.</p>
      )}
    </>
  );
}

function Endpoints({ org }: { org: OrgSummary }) {
  const base = `/dashboard/api/orgs/${encodeURIComponent(org.id)}/webhooks`;
  const list = usePaged<Endpoint>(base);
  const [secret, setSecret] = useState<{ title: string; value: string } | null>(null);
  const [change, setChange] = useState<Change | null>(null);
  const [log, setLog] = useState<Endpoint | null>(null);
  const [tested, setTested] = useState<string | null>(null);
  const test = useAction();
  return (
    <>
      {secret && (
        <ShownOnce
          title={secret.title}
          value={secret.value}
          label="Signing secret"
          noun="secret"
          warning={SECRET_WARNING}
          onDone={() => setSecret(null)}
        />
      )}
      <CreateEndpoint
        base={base}
        onCreated={(created) => {
          setSecret({ title: `Signing secret of ${created.url}`, value: created.secret });
          list.reload();
        }}
      />
      <section aria-labelledby="endpoints-heading">
        <h2 id="endpoints-heading">Endpoints</h2>
        <ErrorNote error={list.error ?? test.error} />
        <p class="muted small" role="status" aria-live="polite">
          {tested && `Test event ${tested} queued: its outcome shows in the delivery log.`}
        </p>
        {list.loading && <Loading what="endpoints" />}
        {list.data && list.data.length === 0 && <Empty>No webhook endpoints yet.</Empty>}
        {list.data && list.data.length > 0 && (
          <div class="table-wrap">
            <table>
              <thead>
                <tr>
                  <th scope="col">URL</th>
                  <th scope="col">Events</th>
                  <th scope="col">Status</th>
                  <th scope="col">Last success</th>
                  <th scope="col">
                    <span class="visually-hidden">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {list.data.map((endpoint) => (
                  <tr key={`${endpoint.id}-${endpoint.status}`}>
                    <td>
                      <code>{endpoint.url}</code>
                      {endpoint.description && (
                        <div class="muted small">{endpoint.description}</div>
                      )}
                    </td>
                    <td class="small">
                      {endpoint.event_types.length === 0 ? 'all' : endpoint.event_types.join(', ')}
                    </td>
                    <td>
                      <Status value={endpoint.status} />
                      {endpoint.disabled_reason && (
                        <div class="muted small">({endpoint.disabled_reason})</div>
                      )}
                      {endpoint.failing_since && (
                        <div class="muted small">
                          failing since {formatTime(endpoint.failing_since)}
                        </div>
                      )}
                    </td>
                    <td class="nowrap">
                      {endpoint.last_success_at ? formatTime(endpoint.last_success_at) : '—'}
                    </td>
                    <td class="row-actions">
                      <button
                        type="button"
                        class="secondary"
                        aria-label={`Delivery log of ${endpoint.url}`}
                        onClick={() => setLog(log?.id === endpoint.id ? null : endpoint)}
                      >
                        Deliveries
                      </button>{' '}
                      <button
                        type="button"
                        class="secondary"
                        disabled={test.busy}
                        aria-label={`Send a test event to ${endpoint.url}`}
                        onClick={() => {
                          setTested(null);
                          void test.run(async () => {
                            const queued = await api.post<{ message_id: string }>(
                              `${base}/${encodeURIComponent(endpoint.id)}/test`,
                            );
                            setTested(queued.message_id);
                          });
                        }}
                      >
                        Send test
                      </button>{' '}
                      <button
                        type="button"
                        class="secondary"
                        aria-label={`Rotate the secret of ${endpoint.url}`}
                        onClick={() => setChange({ endpoint, action: 'rotate' })}
                      >
                        Rotate secret…
                      </button>{' '}
                      <button
                        type="button"
                        class="secondary"
                        aria-label={`${endpoint.status === 'enabled' ? 'Disable' : 'Enable'} ${endpoint.url}`}
                        onClick={() =>
                          setChange({
                            endpoint,
                            action: endpoint.status === 'enabled' ? 'disable' : 'enable',
                          })
                        }
                      >
                        {endpoint.status === 'enabled' ? 'Disable…' : 'Enable…'}
                      </button>{' '}
                      <button
                        type="button"
                        class="danger secondary"
                        aria-label={`Delete ${endpoint.url}`}
                        onClick={() => setChange({ endpoint, action: 'delete' })}
                      >
                        Delete…
                      </button>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
        <MoreButton list={list} what="endpoints" />
      </section>
      {log && <DeliveryLog key={log.id} base={base} endpoint={log} />}
      {change && (
        <ChangeEndpoint
          base={base}
          change={change}
          onClose={() => setChange(null)}
          onChanged={(rotated) => {
            setChange(null);
            if (rotated) {
              setSecret({ title: `New signing secret of ${rotated.url}`, value: rotated.secret });
            }
            list.reload();
          }}
        />
      )}
    </>
  );
}

function CreateEndpoint(props: {
  base: string;
  onCreated(created: Endpoint & { secret: string }): void;
}) {
  const [url, setUrl] = useState('');
  const [description, setDescription] = useState('');
  const [types, setTypes] = useState<string[]>([]);
  const action = useAction();
  return (
    <form
      class="card"
      aria-labelledby="create-webhook-heading"
      onSubmit={(event) => {
        event.preventDefault();
        let created: (Endpoint & { secret: string }) | null = null;
        const body = {
          url: url.trim(),
          ...(description.trim() && { description: description.trim() }),
          event_types: types,
        };
        void action
          .run(async () => {
            created = await api.post<Endpoint & { secret: string }>(props.base, body);
          })
          .then((done) => {
            if (!done || !created) return;
            props.onCreated(created);
            setUrl('');
            setDescription('');
            setTypes([]);
          });
      }}
    >
      <h2 id="create-webhook-heading">Add an endpoint</h2>
      <div class="row">
        <label class="grow">
          URL (https)
          <input
            name="webhook-url"
            type="url"
            required
            placeholder="https://example.com/gw-webhooks"
            value={url}
            onInput={(event) => setUrl(event.currentTarget.value)}
          />
        </label>
        <label class="grow">
          Description (optional)
          <input
            name="webhook-description"
            value={description}
            onInput={(event) => setDescription(event.currentTarget.value)}
          />
        </label>
      </div>
      <fieldset>
        <legend>Events (none ticked: every event)</legend>
        <div class="checks">
          {SUBSCRIBABLE_EVENT_TYPES.map((type) => (
            <label class="check" key={type}>
              <input
                type="checkbox"
                checked={types.includes(type)}
                onChange={(event) =>
                  setTypes((current) =>
                    event.currentTarget.checked
                      ? [...current, type]
                      : current.filter((value) => value !== type),
                  )
                }
              />
              <code>{type}</code>
            </label>
          ))}
        </div>
      </fieldset>
      <ErrorNote error={action.error} />
      <button type="submit" disabled={action.busy}>
        {action.busy ? 'Adding…' : 'Add endpoint'}
      </button>
    </form>
  );
}

function ChangeEndpoint(props: {
  base: string;
  change: Change;
  onClose(): void;
  onChanged(rotated: (Endpoint & { secret: string }) | null): void;
}) {
  const { endpoint, action: verb } = props.change;
  const path = `${props.base}/${encodeURIComponent(endpoint.id)}`;
  const action = useAction();
  const titles = {
    disable: 'Disable',
    enable: 'Enable',
    delete: 'Delete',
    rotate: 'Rotate the secret of',
  } as const;
  const labels = {
    disable: 'Disable endpoint',
    enable: 'Enable endpoint',
    delete: 'Delete endpoint',
    rotate: 'Rotate secret',
  } as const;
  return (
    <Confirm
      title={`${titles[verb]} ${endpoint.url}?`}
      confirmLabel={labels[verb]}
      busy={action.busy}
      error={action.error}
      onCancel={props.onClose}
      onConfirm={() => {
        let rotated: (Endpoint & { secret: string }) | null = null;
        void action
          .run(async () => {
            if (verb === 'delete') await api.delete(path);
            else if (verb === 'rotate') {
              rotated = await api.post<Endpoint & { secret: string }>(`${path}/rotate-secret`);
            } else await api.patch(path, { enabled: verb === 'enable' });
          })
          .then((done) => done && props.onChanged(rotated));
      }}
    >
      <p>
        {verb === 'delete' &&
          'gw stops sending to this URL and forgets the endpoint, its secret and its delivery log.'}
        {verb === 'disable' &&
          'gw stops sending to this URL; events meanwhile wait, and go out if you enable it again.'}
        {verb === 'enable' &&
          'gw sends to this URL again, starting with the messages that waited; past failures are forgotten.'}
        {verb === 'rotate' &&
          'A new secret is shown once. The old one keeps signing beside it for 24 hours, so your receiver can switch without missing deliveries.'}
      </p>
    </Confirm>
  );
}

function DeliveryLog({ base, endpoint }: { base: string; endpoint: Endpoint }) {
  const path = `${base}/${encodeURIComponent(endpoint.id)}`;
  const list = usePaged<Delivery>(`${path}/deliveries?limit=50`);
  const action = useAction();
  const [queued, setQueued] = useState<string | null>(null);
  return (
    <section class="card" aria-labelledby="deliveries-heading">
      <h2 id="deliveries-heading">Deliveries to {endpoint.url}</h2>
      <div class="actions">
        <button type="button" class="secondary" onClick={list.reload}>
          Refresh
        </button>
      </div>
      <ErrorNote error={list.error ?? action.error} />
      <p class="muted small" role="status" aria-live="polite">
        {queued && `${queued} queued again.`}
      </p>
      {list.loading && <Loading what="deliveries" />}
      {list.data && list.data.length === 0 && <Empty>Nothing sent to this endpoint yet.</Empty>}
      {list.data && list.data.length > 0 && (
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">Created</th>
                <th scope="col">Event</th>
                <th scope="col">Status</th>
                <th scope="col">Attempts</th>
                <th scope="col">Last answer</th>
                <th scope="col">
                  <span class="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {list.data.map((delivery) => {
                const last = delivery.attempts[0];
                return (
                  <tr key={`${delivery.id}-${delivery.status}-${delivery.attempt_count}`}>
                    <td class="nowrap">{formatTime(delivery.created_at)}</td>
                    <td>
                      <code>{delivery.event_type}</code>
                      <div class="muted small">
                        <code>{delivery.message_id}</code>
                      </div>
                    </td>
                    <td>
                      <Status value={delivery.status} />
                      {delivery.next_attempt_at && delivery.status === 'pending' && (
                        <div class="muted small">next {formatTime(delivery.next_attempt_at)}</div>
                      )}
                    </td>
                    <td class="num">{delivery.attempt_count}</td>
                    <td class="small">
                      {last
                        ? `${last.status_code ?? last.error ?? 'no answer'} · ${last.latency_ms} ms`
                        : '—'}
                    </td>
                    <td class="row-actions">
                      {delivery.status !== 'pending' && (
                        <button
                          type="button"
                          class="secondary"
                          disabled={action.busy}
                          aria-label={`Send ${delivery.message_id} again`}
                          onClick={() => {
                            setQueued(null);
                            void action
                              .run(() =>
                                api.post(`${path}/redeliver`, { message_id: delivery.message_id }),
                              )
                              .then((done) => {
                                if (!done) return;
                                setQueued(delivery.message_id);
                                list.reload();
                              });
                          }}
                        >
                          Send again
                        </button>
                      )}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
      <MoreButton list={list} what="deliveries" />
    </section>
  );
}
