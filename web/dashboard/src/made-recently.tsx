// "Made by your account recently" (decisions 419, 421, 477): the OAuth approvals, API keys,
// service keys, pending invitations, OAuth clients and webhook endpoints the signed-in account
// made that still work, and the members it let in or raised, in every organization it is in,
// each with a revoke button that calls the object's own revoke route (a member's removes them) (GET /dashboard/api/user/made-recently
// names it, and whether the account's role there allows it). A password reset ends sessions,
// not these: after one by e-mailed link, a banner above every page, in every browser the account
// signs in to, leads here until the list has been read or the banner dismissed (decision 513).
import type { ComponentChildren } from 'preact';
import type { z } from 'zod';
import type {
  madeItemSchema,
  madeRecentlySchema,
} from '../../../src/routes/dashboard/made-recently-answers.js';
import { useEffect, useState } from 'preact/hooks';
import { api, type SignedIn } from './api.js';
import { useLoad } from './hooks.js';
import { navigate, orgView } from './router.js';
import { Confirm, formatTime, Link, ListTable, RowButton, type Column } from './ui.js';

/** One thing the account made that still works (`via_email`: let in or raised by this member,
 * whom the account, or one it reached, let in or raised), and the answer listing them. */
type MadeItem = z.output<typeof madeItemSchema>;
type MadeRecentlyAnswer = z.output<typeof madeRecentlySchema>;

/** Said on the window when a reset's review is marked done here: the banner leaves at once. */
const RESET_REVIEWED = 'gw:reset-reviewed';

/**
 * Tells gw the review of the reset at `passwordResetAt` is done (decision 513): no browser
 * the account signs in to shows the banner again, until another reset. Best effort: when it
 * fails, the banner comes back at the next sign-in, and the list is still on the account page.
 */
function markReviewed(passwordResetAt: string): void {
  window.dispatchEvent(new CustomEvent(RESET_REVIEWED, { detail: passwordResetAt }));
  api
    .post('/dashboard/api/user/made-recently/reviewed', { password_reset_at: passwordResetAt })
    .catch(() => undefined);
}

/** The reset whose review this session still asks for: null once marked done here. */
function useReviewPending(session: SignedIn): string | null {
  const asked = session.review_after_reset?.password_reset_at ?? null;
  const [reviewed, setReviewed] = useState<string | null>(null);
  useEffect(() => {
    const done = (event: Event) => setReviewed((event as CustomEvent<string>).detail);
    window.addEventListener(RESET_REVIEWED, done);
    return () => window.removeEventListener(RESET_REVIEWED, done);
  }, []);
  return asked !== null && asked !== reviewed ? asked : null;
}

/**
 * Above every page but the account page, in every browser the account signs in to, after a
 * password reset by e-mailed link, until the list was read or the banner dismissed.
 */
export function ReviewAfterResetBanner(props: { session: SignedIn; onAccountPage: boolean }) {
  const pending = useReviewPending(props.session);
  if (pending === null || props.onAccountPage) return null;
  return (
    <section class="email-notice card" aria-labelledby="review-after-reset-heading">
      <h2 id="review-after-reset-heading">Your password was reset: review your account</h2>
      <p>
        Resetting the password signed out every session, but whatever was made with your account
        keeps working: OAuth apps it approved, API keys, service keys, OAuth clients and webhook
        endpoints it created, invitations it sent, members it let in or gave a higher role. If
        someone else had your password, revoke what you did not make.
      </p>
      <div class="actions">
        <button type="button" onClick={() => navigate({ page: 'account' })}>
          Review what your account made
        </button>
        <button type="button" class="secondary" onClick={() => markReviewed(pending)}>
          Dismiss
        </button>
      </div>
    </section>
  );
}

const WINDOWS = [7, 30, 90, 365] as const;
const DAY_MS = 86_400_000;

const KIND_LABEL: Record<MadeItem['kind'], string> = {
  api_key: 'API key',
  service_key: 'Service key',
  oauth_approval: 'Connected app',
  invitation: 'Invitation',
  oauth_client: 'OAuth client',
  webhook_endpoint: 'Webhook endpoint',
  member: 'Member',
};

function describe(item: MadeItem): string {
  if (item.kind === 'oauth_approval') {
    const via =
      item.client_name && item.client_name !== item.app_name ? ` (${item.client_name})` : '';
    const by = item.app_org_name ? ` by ${item.app_org_name}` : '';
    return `${item.app_name ?? 'an app'}${via}${by}`;
  }
  if (item.kind === 'invitation') return `of ${item.name ?? ''} as ${item.invited_role ?? ''}`;
  if (item.kind === 'member') return `${item.name ?? ''} (${item.member_role ?? ''})`;
  if (item.kind === 'webhook_endpoint') {
    return `${item.url ?? ''}${item.name ? ` (${item.name})` : ''}`;
  }
  if (item.kind === 'oauth_client') {
    const secret = item.key_hint ? ` ${item.key_hint}` : ' (public)';
    return `${item.name ?? ''}${secret}${item.app_name ? ` of ${item.app_name}` : ''}`;
  }
  const named = item.name ? `${item.name} ` : '';
  const app = item.kind === 'api_key' && item.app_name ? ` of ${item.app_name}` : '';
  return `${named}${item.key_hint ?? ''}${app}`;
}

/** The kind inside a sentence ("Revoke the API key …?"). */
const KIND_IN_TEXT: Record<MadeItem['kind'], string> = {
  api_key: 'API key',
  service_key: 'service key',
  oauth_approval: 'connected app',
  invitation: 'invitation',
  oauth_client: 'OAuth client',
  webhook_endpoint: 'webhook endpoint',
  member: 'member',
};

/** What the confirmation says happens. */
function consequence(item: MadeItem): ComponentChildren {
  switch (item.kind) {
    case 'member':
      return (
        <>
          <p>
            This removes {item.name} from {item.org_name}: they lose access to it at once, and the
            OAuth apps they approved there are revoked.
          </p>
          {item.made_as === 'raised' && (
            <p>
              If they should stay a member and only the role{' '}
              {item.via_email === null ? 'you gave them' : `${item.via_email} gave them`} (
              {item.given_role}) is wrong, change their role on the{' '}
              <Link to={orgView(item.org_id, 'members')}>Members page</Link> of {item.org_name}{' '}
              instead.
            </p>
          )}
        </>
      );
    case 'oauth_approval':
      return (
        <p>{`The app's token stops working at once; ${item.org_name} no longer pays for it.`}</p>
      );
    case 'invitation':
      return <p>The invitation can no longer be accepted.</p>;
    case 'webhook_endpoint':
      return <p>The endpoint and its delivery log are deleted: nothing more is sent to it.</p>;
    case 'oauth_client':
      return (
        <p>
          The client is deleted: its secrets stop, it signs no one in again, and every connection
          made through it is revoked. If it is your app's own client and only its secret leaked,
          rotate the secret with no grace on the app's page instead.
        </p>
      );
    default:
      return (
        <p>The key stops working at once, on every instance. Whoever uses it gets an error.</p>
      );
  }
}

const HOW: Record<MadeItem['made_as'], string> = {
  created: 'you created it',
  rotated: 'you rotated it',
  approved: 'you approved it; the organization pays',
  invited: 'you sent it; it is pending',
  redirected: 'you changed its address; it still sends there',
  joined: 'joined through your invitation; still a member',
  raised: 'you raised their role; they still hold it',
};

/** The same, for a member reached through another: who did it (decision 531). */
const HOW_VIA: Partial<Record<MadeItem['made_as'], (via: string) => string>> = {
  joined: (via) => `joined through an invitation of ${via}, whom your account let in or raised`,
  raised: (via) => `${via}, whom your account let in or raised, raised their role`,
};

const how = (item: MadeItem): string => {
  const via = item.via_email === null ? undefined : HOW_VIA[item.made_as];
  return via ? via(item.via_email!) : HOW[item.made_as];
};

/** The row's and the confirmation's verb: a member is removed, the rest revoked. */
const verbOf = (item: MadeItem): string => (item.kind === 'member' ? 'Remove' : 'Revoke');

/** Who may revoke it, when the account's role there may not. */
const whoMay = (item: MadeItem): string =>
  item.invited_role === 'owner' || item.member_role === 'owner' ? 'an owner' : 'an admin';

/** The list, on the account page: what this account made in the window that still works. */
export function MadeRecently(props: { session: SignedIn }) {
  const pending = useReviewPending(props.session);
  const [days, setDays] = useState<(typeof WINDOWS)[number]>(30);
  // the window's start, fixed when it is chosen (a new one each render would reload forever)
  const [since, setSince] = useState(() => new Date(Date.now() - days * DAY_MS).toISOString());
  const list = useLoad<MadeRecentlyAnswer>(
    `/dashboard/api/user/made-recently?since=${encodeURIComponent(since)}`,
  );
  const [revoking, setRevoking] = useState<MadeItem | null>(null);
  useEffect(() => {
    if (list.data && pending !== null) markReviewed(pending); // read: the banner's work is done
  }, [list.data, pending]);
  const columns: Column<MadeItem>[] = [
    { header: 'Made', cell: (item) => formatTime(item.created_at), class: 'nowrap' },
    {
      header: 'What',
      rowHeader: true,
      class: 'breakable name',
      cell: (item) => (
        <>
          <strong>{KIND_LABEL[item.kind]}</strong> {describe(item)}
          <br />
          <span class="muted small">{how(item)}</span>
        </>
      ),
    },
    {
      header: 'Organization',
      class: 'breakable name',
      cell: (item) => (
        <>
          <Link to={orgView(item.org_id)}>{item.org_name}</Link>{' '}
          <span class="muted small">({item.your_role})</span>
        </>
      ),
    },
  ];
  return (
    <section id="made-recently" aria-labelledby="made-recently-heading">
      <h2 id="made-recently-heading">Made by your account recently</h2>
      <p class="muted small">
        What your account made that still works, in every organization you are a member of: OAuth
        apps it approved; API keys, service keys, OAuth clients and webhook endpoints it created (or
        rotated; a webhook endpoint whose address it changed); invitations it sent that are still
        pending; members who joined through its invitations, or whose role it raised, while they
        still hold it, and those such members let in or raised in turn. A password reset signs out
        every session but stops none of these: if you did not make one, revoke it (a member,
        remove). Revoking a connected app takes any member of its organization; everything else, an
        admin (an owner invitation, or removing an owner, an owner).
      </p>
      {list.data?.password_reset_at && (
        <p role="status">
          Your password was reset on {formatTime(list.data.password_reset_at)}. Whatever was made
          before then may have been made by whoever knew the old password.
        </p>
      )}
      <label class="made-window">
        Made in the last{' '}
        <select
          value={days}
          onChange={(event) => {
            const chosen = Number(event.currentTarget.value) as (typeof WINDOWS)[number];
            setDays(chosen);
            setSince(new Date(Date.now() - chosen * DAY_MS).toISOString());
          }}
        >
          {WINDOWS.map((window) => (
            <option key={window} value={window}>
              {window} days
            </option>
          ))}
        </select>
      </label>
      <ListTable
        list={list}
        rows={list.data?.data ?? null}
        what="what your account made"
        empty="Nothing your account made in this time still works."
        columns={columns}
        rowKey={(item) => `${item.kind}/${item.org_id}/${item.id}`}
        caption="Made by your account recently"
        actions={(item) =>
          item.can_revoke ? (
            <RowButton
              label={verbOf(item)}
              name={`${verbOf(item)} ${KIND_LABEL[item.kind]} ${describe(item)}`}
              danger
              onClick={() => setRevoking(item)}
            />
          ) : (
            <span class="muted small">
              Only {whoMay(item)} of {item.org_name} can {verbOf(item).toLowerCase()}{' '}
              {item.kind === 'member' ? 'them' : 'it'}
            </span>
          )
        }
      />
      {list.data?.truncated && (
        <p class="muted small">
          Only the newest {list.data.data.length} are listed: revoke what you did not make, and the
          rest show.
        </p>
      )}
      {revoking && (
        <Confirm
          title={
            revoking.kind === 'member'
              ? `Remove ${revoking.name ?? ''} from ${revoking.org_name}?`
              : `Revoke the ${KIND_IN_TEXT[revoking.kind]} ${describe(revoking)}?`
          }
          confirmLabel={verbOf(revoking)}
          write={() =>
            revoking.revoke_method === 'DELETE'
              ? api.delete(revoking.revoke_path)
              : api.post(revoking.revoke_path)
          }
          onDone={() => {
            setRevoking(null);
            list.reload();
          }}
          onCancel={() => setRevoking(null)}
        >
          {consequence(revoking)}
        </Confirm>
      )}
    </section>
  );
}
