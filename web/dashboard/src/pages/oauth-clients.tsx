// One app's OAuth clients (the app page shows them): registering one — a confidential
// client's secret shown once —, the list with secret hints, rotating a confidential client's
// secret (the new one shown once, the old one working for the grace chosen), and deleting one.
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { useAction, usePaged } from '../hooks.js';
import {
  Confirm,
  ErrorNote,
  formatTime,
  Id,
  ListTable,
  RowButton,
  ShownOnce,
  Status,
  Url,
} from '../ui.js';
import {
  GraceChoice,
  RetiredSecretsNote,
  useRotationGrace,
  type SecretUse,
} from '../secret-rotation.js';
import type { CreatedOAuthClient, OAuthClient, RotatedOAuthClient } from '../types.js';

export function OAuthClients({ appId, manage }: { appId: string; manage: boolean }) {
  const base = `/dashboard/api/apps/${encodeURIComponent(appId)}/oauth-clients`;
  const list = usePaged<OAuthClient>(`${base}?limit=200`);
  const [secret, setSecret] = useState<{ title: string; value: string } | null>(null);
  const [deleting, setDeleting] = useState<OAuthClient | null>(null);
  const [rotating, setRotating] = useState<OAuthClient | null>(null);
  const rows = list.data?.filter((client) => client.status === 'active') ?? null;
  return (
    <section aria-labelledby="oauth-clients-heading">
      <h2 id="oauth-clients-heading">OAuth clients</h2>
      <p class="muted">
        Let people connect this app to their own organization through OAuth sign-in: their wallet
        pays for its requests (see the OAuth guide).
      </p>
      {secret && (
        <ShownOnce
          title={secret.title}
          value={secret.value}
          label="Client secret"
          noun="secret"
          warning="gw keeps only a hash of it; if it is lost, rotate the secret."
          onDone={() => setSecret(null)}
        />
      )}
      {manage && (
        <CreateClient
          base={base}
          onCreated={(client) => {
            if (client.client_secret) {
              setSecret({ title: `Client secret of ${client.name}`, value: client.client_secret });
            }
            list.reload();
          }}
        />
      )}
      <ListTable
        list={list}
        rows={rows}
        what="OAuth clients"
        empty="No OAuth clients for this app."
        rowKey={(client) => client.client_id}
        columns={[
          { header: 'Name', class: 'breakable name', cell: (client) => client.name },
          // broken after its prefix where the row is narrow: the table then fits the page
          { header: 'Client id', cell: (client) => <Id value={client.client_id} /> },
          {
            header: 'Kind',
            class: 'small',
            cell: (client) =>
              client.public ? (
                'public (PKCE)'
              ) : (
                <>
                  confidential <code>{client.client_secret_hint}</code>
                  {client.retired_secrets_expire_at.map((end) => (
                    <div key={end} class="muted">
                      an old secret works until {formatTime(end)}
                    </div>
                  ))}
                </>
              ),
          },
          {
            header: 'Redirect URIs',
            class: 'small',
            cell: (client) =>
              client.redirect_uris.map((uri) => (
                <div key={uri}>
                  <Url value={uri} />
                </div>
              )),
          },
          { header: 'Created', cell: (client) => formatTime(client.created_at) },
        ]}
        actions={(client) => (
          <>
            <Status value={client.status} />{' '}
            {manage && !client.public && (
              <>
                <RowButton
                  label="Rotate secret…"
                  name={`Rotate secret of OAuth client ${client.name}`}
                  onClick={() => setRotating(client)}
                />{' '}
              </>
            )}
            {manage && (
              <RowButton
                label="Delete…"
                name={`Delete OAuth client ${client.name}`}
                danger
                onClick={() => setDeleting(client)}
              />
            )}
          </>
        )}
      />
      {rotating && (
        <RotateSecret
          client={rotating}
          onClose={() => setRotating(null)}
          onRotated={(rotated) => {
            setRotating(null);
            setSecret({
              title: `New client secret of ${rotated.name}`,
              value: rotated.client_secret,
            });
            list.reload();
          }}
        />
      )}
      {deleting && (
        <DeleteClient
          client={deleting}
          onClose={() => setDeleting(null)}
          onDeleted={() => {
            setDeleting(null);
            list.reload();
          }}
        />
      )}
    </section>
  );
}

function CreateClient(props: { base: string; onCreated(client: CreatedOAuthClient): void }) {
  const [name, setName] = useState('');
  const [uris, setUris] = useState('');
  const [isPublic, setPublic] = useState(false);
  const action = useAction();
  return (
    <form
      class="card"
      aria-labelledby="create-oauth-client-heading"
      onSubmit={action.submit(
        () =>
          api.create<CreatedOAuthClient>(props.base, {
            name: name.trim(),
            redirect_uris: uris.split(/\s+/).filter((uri) => uri !== ''),
            public: isPublic,
          }),
        (created) => {
          props.onCreated(created);
          setName('');
          setUris('');
          setPublic(false);
        },
      )}
    >
      <h3 id="create-oauth-client-heading">Register an OAuth client</h3>
      <div class="row">
        <label>
          Client name
          <input
            name="oauth-client-name"
            required
            value={name}
            onInput={(event) => setName(event.currentTarget.value)}
          />
        </label>
        <label class="grow">
          Redirect URIs (one a line)
          <textarea
            name="oauth-client-redirect-uris"
            required
            rows={2}
            value={uris}
            onInput={(event) => setUris(event.currentTarget.value)}
          />
        </label>
      </div>
      <label class="check">
        <input
          type="checkbox"
          name="oauth-client-public"
          checked={isPublic}
          onChange={(event) => setPublic(event.currentTarget.checked)}
        />
        Public client (a browser or mobile app: no secret, PKCE only)
      </label>
      <ErrorNote error={action.error} />
      <button type="submit" disabled={action.busy}>
        {action.busy ? 'Registering…' : 'Register OAuth client'}
      </button>
    </form>
  );
}

function DeleteClient(props: { client: OAuthClient; onClose(): void; onDeleted(): void }) {
  return (
    <Confirm
      title={`Delete OAuth client ${props.client.name}?`}
      confirmLabel="Delete OAuth client"
      write={() =>
        api.delete(`/dashboard/api/oauth-clients/${encodeURIComponent(props.client.client_id)}`)
      }
      onDone={props.onDeleted}
      onCancel={props.onClose}
    >
      <p>
        Every connection made through it is revoked: their tokens stop working on every gateway
        instance at once, and people must connect again through another client.
      </p>
    </Confirm>
  );
}

/** What a client's old secret does in the rotate dialog's words. */
const AUTHENTICATING: SecretUse = {
  verb: 'work',
  ing: 'working',
  third: 'works',
  switcher: 'an app',
};

function RotateSecret(props: {
  client: OAuthClient;
  onClose(): void;
  onRotated(rotated: RotatedOAuthClient): void;
}) {
  const [grace, setGrace] = useRotationGrace();
  const leaked = grace.seconds === 0;
  const path = `/dashboard/api/oauth-clients/${encodeURIComponent(props.client.client_id)}`;
  return (
    <Confirm
      title={`Rotate the secret of OAuth client ${props.client.name}?`}
      confirmLabel="Rotate secret"
      write={() =>
        api.post<RotatedOAuthClient>(`${path}/rotate-secret`, {
          grace_seconds: grace.seconds,
        })
      }
      onDone={props.onRotated}
      onCancel={props.onClose}
    >
      <p>
        {leaked
          ? 'A new secret is shown once, and from now on only it works: every old secret stops at once, so the app cannot exchange codes or revoke tokens until it has the new one.'
          : `A new secret is shown once. The old one keeps working beside it for ${grace.span}, so the app can switch without failing a sign-in.`}{' '}
        Connections made through this client stay, and their tokens keep working.
      </p>
      <GraceChoice use={AUTHENTICATING} grace={grace} onChange={setGrace} />
      <RetiredSecretsNote
        use={AUTHENTICATING}
        retiredEnds={props.client.retired_secrets_expire_at}
        leaked={leaked}
      />
    </Confirm>
  );
}
