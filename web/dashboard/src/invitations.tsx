// The invitations waiting for the signed-in user: shown above every page until answered.
// Accepting joins the organization (the session's organizations are read again, and the
// dashboard opens the one joined); declining only removes the invitation from the list. Where
// anyone may sign up, accepting needs the invitation link its sender passed on (decision 365):
// the banner asks for it, filled in with the last link opened in this browser
// (invitation-link.ts keeps it until it is used).
import { useEffect, useState } from 'preact/hooks';
import { api, signUpOpen } from './api.js';
import { useAction, usePaged } from './hooks.js';
import {
  forgetInvitationToken,
  keptInvitationToken,
  LINK_TOKEN,
  onInvitationLinkOpened,
} from './invitation-link.js';
import { ErrorNote, formatTime } from './ui.js';
import type { Invitation } from './types.js';

/** The accept token in a pasted invitation link, or what was pasted (the token alone). */
function tokenOf(pasted: string): string {
  return LINK_TOKEN.exec(pasted)?.[1] ?? pasted.trim();
}

export function PendingInvitations(props: { onJoined(orgId: string): void }) {
  const list = usePaged<Invitation>('/dashboard/api/user/invitations');
  const [answered, setAnswered] = useState<ReadonlySet<string>>(new Set());
  // A link opened in this tab may be to an invitation sent since the list was read.
  useEffect(() => onInvitationLinkOpened(() => list.reload()), [list.reload]);
  const open = (list.data ?? []).filter((invitation) => !answered.has(invitation.id));
  if (open.length === 0) return null;
  const answer = (invitation: Invitation) => {
    setAnswered((before) => new Set([...before, invitation.id]));
    // the kept link was this one's, or is of none left to answer
    if (open.length === 1 && !list.hasMore) forgetInvitationToken();
  };
  return (
    <section class="invitations card" aria-labelledby="invitations-heading">
      <h2 id="invitations-heading">
        {open.length === 1 ? 'You have an invitation' : `You have ${open.length} invitations`}
      </h2>
      <ul>
        {open.map((invitation) => (
          <InvitationItem
            key={invitation.id}
            invitation={invitation}
            onAccepted={() => {
              answer(invitation);
              props.onJoined(invitation.org_id);
            }}
            onDeclined={() => answer(invitation)}
          />
        ))}
      </ul>
      {list.hasMore && (
        <button type="button" class="secondary" onClick={list.more} disabled={list.loadingMore}>
          More invitations
        </button>
      )}
    </section>
  );
}

function InvitationItem(props: { invitation: Invitation; onAccepted(): void; onDeclined(): void }) {
  const { invitation } = props;
  const action = useAction();
  const needsLink = signUpOpen();
  const [pasted, setPasted] = useState(keptInvitationToken);
  useEffect(() => onInvitationLinkOpened(setPasted), []);
  const token = tokenOf(pasted);
  const path = `/dashboard/api/user/invitations/${encodeURIComponent(invitation.id)}`;
  const from = invitation.invited_by_email ?? 'A member';
  return (
    <li>
      <p>
        {from} invited you to join <strong>{invitation.org_name}</strong> as{' '}
        <span class="role">{invitation.role}</span>.{' '}
        <span class="muted small">Open until {formatTime(invitation.expires_at)}.</span>
      </p>
      {needsLink && (
        <label>
          Invitation link (from whoever invited you)
          <input
            name={`invitation-link-${invitation.id}`}
            value={pasted}
            spellcheck={false}
            autocomplete="off"
            onInput={(event) => {
              setPasted(event.currentTarget.value);
              action.clear();
            }}
          />
        </label>
      )}
      <div class="actions">
        <button
          type="button"
          disabled={action.busy || (needsLink && token === '')}
          aria-label={`Accept the invitation to ${invitation.org_name}`}
          onClick={() => {
            void action
              .run(() => api.post(`${path}/accept`, needsLink ? { token } : undefined))
              .then((done) => {
                if (!done) return;
                forgetInvitationToken(token);
                props.onAccepted();
              });
          }}
        >
          Accept
        </button>
        <button
          type="button"
          class="secondary"
          disabled={action.busy}
          aria-label={`Decline the invitation to ${invitation.org_name}`}
          onClick={() => {
            void action
              .run(() => api.post(`${path}/decline`))
              .then((done) => {
                if (done) props.onDeclined();
              });
          }}
        >
          Decline
        </button>
      </div>
      <ErrorNote error={action.error} />
    </li>
  );
}
