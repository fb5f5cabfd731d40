// Webhooks: the organization's endpoints (admins and owners only: the API refuses others),
// adding one (its whsec_ signing secret shown once), enabling and disabling, rotating the
// secret, a test event, the delivery log and sending messages again.
import { useEffect, useState } from 'preact/hooks';
import { api, canManage, type OrgSummary } from '../api.js';
import { useAction, useNotice, usePaged } from '../hooks.js';
import {
  Confirm,
  ErrorNote,
  formatTime,
  ListTable,
  PageHeader,
  RowButton,
  ShownOnce,
  Status,
  Url,
} from '../ui.js';
import { EVENT_TYPES as ALL_EVENT_TYPES } from '../../../../src/webhooks/events.js';
import {
  GraceChoice,
  RetiredSecretsNote,
  useRotationGrace,
  type SecretUse,
} from '../secret-rotation.js';
import type { OrgPage } from './page.js';
import type {
  WebhookDelivery,
  WebhookEndpoint,
  WebhookEndpointWithSecret,
  WebhookTestQueued,
} from '../types.js';

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

/** Until when each retired secret of `endpoint` still signs beside the current one, soonest first. */
function retiredSecretsEnds(endpoint: WebhookEndpoint): string[] {
  const ends = [...endpoint.earlier_secrets_expire_at];
  if (endpoint.previous_secret_expires_at) ends.push(endpoint.previous_secret_expires_at);
  return ends.sort();
}

type Change = { endpoint: WebhookEndpoint; action: 'disable' | 'enable' | 'delete' | 'rotate' };

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

/** How often, and how many times, the list is read again after a test event. */
const WATCH_INTERVAL_MS = 1_000;
const WATCH_READS = 20;

function Endpoints({ org }: { org: OrgSummary }) {
  const base = `/dashboard/api/orgs/${encodeURIComponent(org.id)}/webhooks`;
  const list = usePaged<WebhookEndpoint, { http_urls_allowed: boolean }>(base);
  const [secret, setSecret] = useState<{ title: string; value: string } | null>(null);
  const [change, setChange] = useState<Change | null>(null);
  const [log, setLog] = useState<WebhookEndpoint | null>(null);
  const [tested, setTested] = useNotice<string>();
  const test = useAction();
  const reload = list.reload;
  // After a test event is queued, the list is read again for a while, so the endpoint's
  // "Last success" shows the delivery without reloading the page.
  const [watching, setWatching] = useState<{
    id: string;
    lastSuccess: string | null;
    reads: number;
  } | null>(null);
  const watched = watching && list.data?.find((endpoint) => endpoint.id === watching.id);
  const settled = watching && (!watched || watched.last_success_at !== watching.lastSuccess);
  useEffect(() => {
    if (!watching) return;
    if (settled || watching.reads >= WATCH_READS) {
      setWatching(null);
      return;
    }
    const timer = setTimeout(() => {
      reload();
      setWatching((current) => current && { ...current, reads: current.reads + 1 });
    }, WATCH_INTERVAL_MS);
    return () => clearTimeout(timer);
  }, [watching, settled, reload]);
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
        httpAllowed={list.firstPage?.http_urls_allowed ?? null}
        onCreated={(created) => {
          setSecret({ title: `Signing secret of ${created.url}`, value: created.secret });
          test.clear();
          list.reload();
        }}
      />
      <section aria-labelledby="endpoints-heading">
        <h2 id="endpoints-heading">Endpoints</h2>
        <ErrorNote error={test.error} />
        <p class="muted small" role="status" aria-live="polite">
          {tested && `Test event ${tested} queued: its outcome shows in the delivery log.`}
        </p>
        <ListTable
          list={list}
          rows={list.data}
          what="endpoints"
          empty="No webhook endpoints yet."
          rowKey={(endpoint) => `${endpoint.id}-${endpoint.status}`}
          columns={[
            {
              header: 'URL',
              class: 'breakable name',
              cell: (endpoint) => (
                <>
                  <Url value={endpoint.url} />
                  {endpoint.description && <div class="muted small">{endpoint.description}</div>}
                </>
              ),
            },
            {
              header: 'Events',
              class: 'small',
              cell: (endpoint) =>
                endpoint.event_types.length === 0 ? 'all' : endpoint.event_types.join(', '),
            },
            {
              header: 'Status',
              cell: (endpoint) => (
                <>
                  <Status value={endpoint.status} />
                  {endpoint.disabled_reason && (
                    <div class="muted small">({endpoint.disabled_reason})</div>
                  )}
                  {endpoint.failing_since && (
                    <div class="muted small">
                      failing since {formatTime(endpoint.failing_since)}
                    </div>
                  )}
                </>
              ),
            },
            {
              header: 'Old secrets',
              class: 'small',
              cell: (endpoint) => {
                const ends = retiredSecretsEnds(endpoint);
                if (ends.length === 0) return '—';
                return (
                  <>
                    {ends.length === 1 ? '1 still signs' : `${ends.length} still sign`}
                    <ul class="cell-list">
                      {ends.map((end, index) => (
                        <li key={index} class="nowrap">
                          until {formatTime(end)}
                        </li>
                      ))}
                    </ul>
                  </>
                );
              },
            },
            {
              header: 'Last success',
              class: 'nowrap',
              cell: (endpoint) =>
                endpoint.last_success_at ? formatTime(endpoint.last_success_at) : '—',
            },
          ]}
          actions={(endpoint) => {
            const toggle = endpoint.status === 'enabled' ? 'disable' : 'enable';
            return (
              <>
                <RowButton
                  label="Deliveries"
                  name={`Deliveries of ${endpoint.url}`}
                  onClick={() => setLog(log?.id === endpoint.id ? null : endpoint)}
                />{' '}
                <RowButton
                  label="Send test"
                  name={`Send test to ${endpoint.url}`}
                  disabled={test.busy}
                  onClick={() => {
                    setTested(null);
                    void test.run(async () => {
                      const queued = await api.post<WebhookTestQueued>(
                        `${base}/${encodeURIComponent(endpoint.id)}/test`,
                      );
                      setTested(queued.message_id);
                      setWatching({
                        id: endpoint.id,
                        lastSuccess: endpoint.last_success_at,
                        reads: 0,
                      });
                    });
                  }}
                />{' '}
                <RowButton
                  label="Rotate secret…"
                  name={`Rotate secret of ${endpoint.url}`}
                  onClick={() => setChange({ endpoint, action: 'rotate' })}
                />{' '}
                <RowButton
                  label={toggle === 'disable' ? 'Disable…' : 'Enable…'}
                  name={`${toggle === 'disable' ? 'Disable' : 'Enable'} ${endpoint.url}`}
                  onClick={() => setChange({ endpoint, action: toggle })}
                />{' '}
                <RowButton
                  label="Delete…"
                  name={`Delete ${endpoint.url}`}
                  danger
                  onClick={() => setChange({ endpoint, action: 'delete' })}
                />
              </>
            );
          }}
        />
      </section>
      {log && <DeliveryLog key={log.id} base={base} endpoint={log} />}
      {change && (
        <ChangeEndpoint
          base={base}
          change={change}
          onClose={() => setChange(null)}
          onChanged={(rotated) => {
            setChange(null);
            test.clear();
            setTested(null);
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

/** The URL field's label: the schemes this gateway takes (WEBHOOK_ALLOW_HTTP), once known. */
function urlLabel(httpAllowed: boolean | null): string {
  if (httpAllowed === null) return 'URL';
  return httpAllowed ? 'URL (http or https)' : 'URL (https)';
}

function CreateEndpoint(props: {
  base: string;
  /** Whether this gateway takes http:// URLs (null: not known yet). */
  httpAllowed: boolean | null;
  onCreated(created: WebhookEndpointWithSecret): void;
}) {
  const [url, setUrl] = useState('');
  const [description, setDescription] = useState('');
  const [types, setTypes] = useState<string[]>([]);
  const action = useAction();
  return (
    <form
      class="card"
      aria-labelledby="create-webhook-heading"
      onSubmit={action.submit(
        () =>
          api.create<WebhookEndpointWithSecret>(props.base, {
            url: url.trim(),
            ...(description.trim() && { description: description.trim() }),
            event_types: types,
          }),
        (created) => {
          props.onCreated(created);
          setUrl('');
          setDescription('');
          setTypes([]);
        },
      )}
    >
      <h2 id="create-webhook-heading">Add an endpoint</h2>
      <div class="row">
        <label class="grow">
          {urlLabel(props.httpAllowed)}
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

/** What a webhook's old secret does in the rotate dialog's words. */
const SIGNING: SecretUse = {
  verb: 'sign',
  ing: 'signing',
  third: 'signs',
  switcher: 'a receiver',
};

function ChangeEndpoint(props: {
  base: string;
  change: Change;
  onClose(): void;
  onChanged(rotated: WebhookEndpointWithSecret | null): void;
}) {
  const { endpoint, action: verb } = props.change;
  const path = `${props.base}/${encodeURIComponent(endpoint.id)}`;
  const retired = retiredSecretsEnds(endpoint);
  const [grace, setGrace] = useRotationGrace();
  const leaked = grace.seconds === 0;
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
      tone={verb === 'enable' ? 'constructive' : 'destructive'}
      write={async () => {
        if (verb === 'rotate')
          return api.post<WebhookEndpointWithSecret>(`${path}/rotate-secret`, {
            grace_seconds: grace.seconds,
          });
        if (verb === 'delete') await api.delete(path);
        else await api.patch(path, { enabled: verb === 'enable' });
        return null;
      }}
      onDone={props.onChanged}
      onCancel={props.onClose}
    >
      <p>
        {verb === 'delete' &&
          'gw stops sending to this URL and forgets the endpoint, its secret and its delivery log.'}
        {verb === 'disable' &&
          'gw stops sending to this URL; events meanwhile wait, and go out if you enable it again.'}
        {verb === 'enable' &&
          'gw sends to this URL again, starting with the messages that waited; past failures are forgotten.'}
        {verb === 'rotate' &&
          (leaked
            ? 'A new secret is shown once, and from now on only it signs: every old secret stops at once, so deliveries fail their check until your receiver has the new one.'
            : `A new secret is shown once. The old one keeps signing beside it for ${grace.span}, so your receiver can switch without missing deliveries.`)}
      </p>
      {verb === 'rotate' && <GraceChoice use={SIGNING} grace={grace} onChange={setGrace} />}
      {verb === 'rotate' && (
        <RetiredSecretsNote use={SIGNING} retiredEnds={retired} leaked={leaked} />
      )}
    </Confirm>
  );
}

function DeliveryLog({ base, endpoint }: { base: string; endpoint: WebhookEndpoint }) {
  const path = `${base}/${encodeURIComponent(endpoint.id)}`;
  const list = usePaged<WebhookDelivery>(`${path}/deliveries?limit=50`);
  const action = useAction();
  const [queued, setQueued] = useState<string | null>(null);
  return (
    <section class="card" aria-labelledby="deliveries-heading">
      <h2 id="deliveries-heading">
        Deliveries to <Url value={endpoint.url} />
      </h2>
      <div class="actions">
        <button type="button" class="secondary" onClick={list.reload}>
          Refresh
        </button>
      </div>
      <ErrorNote error={action.error} />
      <p class="muted small" role="status" aria-live="polite">
        {queued && `${queued} queued again.`}
      </p>
      <ListTable
        list={list}
        rows={list.data}
        what="deliveries"
        empty="Nothing sent to this endpoint yet."
        rowKey={(delivery) => `${delivery.id}-${delivery.status}-${delivery.attempt_count}`}
        columns={[
          {
            header: 'Created',
            class: 'nowrap',
            cell: (delivery) => formatTime(delivery.created_at),
          },
          {
            header: 'Event',
            cell: (delivery) => (
              <>
                <code>{delivery.event_type}</code>
                <div class="muted small">
                  <code>{delivery.message_id}</code>
                </div>
              </>
            ),
          },
          {
            header: 'Status',
            cell: (delivery) => (
              <>
                <Status value={delivery.status} />
                {delivery.next_attempt_at && delivery.status === 'pending' && (
                  <div class="muted small">next {formatTime(delivery.next_attempt_at)}</div>
                )}
              </>
            ),
          },
          { header: 'Attempts', numeric: true, cell: (delivery) => delivery.attempt_count },
          {
            header: 'Last answer',
            class: 'small',
            cell: (delivery) => {
              const last = delivery.attempts[0];
              return last
                ? `${last.status_code ?? last.error ?? 'no answer'} · ${last.latency_ms} ms`
                : '—';
            },
          },
        ]}
        actions={(delivery) =>
          delivery.status !== 'pending' && (
            <RowButton
              label="Send again"
              name={`Send again ${delivery.message_id}`}
              disabled={action.busy}
              onClick={() => {
                setQueued(null);
                void action
                  .run(() => api.post(`${path}/redeliver`, { message_id: delivery.message_id }))
                  .then((done) => {
                    if (!done) return;
                    setQueued(delivery.message_id);
                    list.reload();
                  });
              }}
            />
          )
        }
      />
    </section>
  );
}
