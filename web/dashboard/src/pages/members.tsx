// Members of the organization: their roles; invite by e-mail (and revoke a pending
// invitation), change a role, remove or leave.
import { useRef, useState } from 'preact/hooks';
import { api, canManage, signUpOpen, type OrgSummary, type Role, type SignedIn } from '../api.js';
import { useAction, useNotice, usePaged, type Paged } from '../hooks.js';
import { INVITATION_DAYS } from '../invitation-link.js';
import {
  Confirm,
  ErrorNote,
  formatTime,
  ListTable,
  PageHeader,
  RowButton,
  ShownOnce,
} from '../ui.js';
import type { OrgPage } from './page.js';
import type { Invitation, MemberRow, SentInvitation } from '../types.js';

/**
 * The roles, each with what it may do: in a role change's confirmation, and under the
 * invitation form's choice (the option itself stays one word: a select is as wide as its
 * longest option, and a sentence in it was cut off beside the e-mail field).
 */
const ROLES: readonly { value: Role; label: string; may: string }[] = [
  { value: 'viewer', label: 'Viewer', may: 'reads everything' },
  { value: 'member', label: 'Member', may: 'reads and uses everything' },
  { value: 'admin', label: 'Admin', may: 'also manages apps, connections, keys and members' },
  { value: 'owner', label: 'Owner', may: 'also manages owners' },
];

/** What a role may do, as a sentence under the invitation form: "Admin: Also manages …". */
function roleHint(role: { label: string; may: string }): string {
  return `${role.label}: ${role.may.charAt(0).toUpperCase()}${role.may.slice(1)}.`;
}

export const membersPage: OrgPage = {
  section: 'members',
  label: 'Members',
  Component: ({ org, session }) => <MembersPage org={org} session={session} />,
};

function MembersPage({ org, session }: { org: OrgSummary; session: SignedIn }) {
  const base = `/dashboard/api/orgs/${encodeURIComponent(org.id)}/members`;
  const list = usePaged<MemberRow>(base);
  const [removing, setRemoving] = useState<MemberRow | null>(null);
  const manage = canManage(org.role);
  const invitations = usePaged<Invitation>(
    manage ? `/dashboard/api/orgs/${encodeURIComponent(org.id)}/invitations` : null,
  );
  const isMe = (member: MemberRow) => member.user_id === session.user.id;
  return (
    <>
      <PageHeader title="Members">
        Who can use the dashboard for {org.name}, and what each may do.
      </PageHeader>
      {manage && (
        <InviteMember
          path={`/dashboard/api/orgs/${encodeURIComponent(org.id)}/invitations`}
          mayInviteOwners={org.role === 'owner'}
          onInvited={invitations.reload}
        />
      )}
      <section aria-labelledby="members-heading">
        <h2 id="members-heading">Members</h2>
        <ListTable
          list={list}
          rows={list.data}
          what="members"
          empty="No members."
          rowKey={(member) => `${member.user_id}-${member.role}`}
          columns={[
            {
              header: 'E-mail',
              cell: (member) => (
                <>
                  {member.email} {isMe(member) && <span class="badge">you</span>}
                </>
              ),
            },
            {
              header: 'Role',
              cell: (member) =>
                manage && !member.personal_organization ? (
                  <RoleControl
                    base={base}
                    member={member}
                    orgName={org.name}
                    isMe={isMe(member)}
                    onChanged={list.reload}
                  />
                ) : (
                  <span class="role">{member.role}</span>
                ),
            },
            { header: 'Member since', cell: (member) => formatTime(member.created_at) },
          ]}
          actions={(member) =>
            // nobody leaves, or is removed from, their own personal organization
            (manage || isMe(member)) &&
            !member.personal_organization && (
              <RowButton
                label={isMe(member) ? 'Leave…' : 'Remove…'}
                name={isMe(member) ? `Leave ${org.name}` : `Remove ${member.email}`}
                danger
                onClick={() => setRemoving(member)}
              />
            )
          }
        />
      </section>
      {manage && <PendingInvitationList list={invitations} orgRole={org.role} orgName={org.name} />}
      {removing && (
        <Confirm
          title={isMe(removing) ? `Leave ${org.name}?` : `Remove ${removing.email}?`}
          confirmLabel={isMe(removing) ? 'Leave organization' : 'Remove member'}
          write={() => api.delete(`${base}/${encodeURIComponent(removing.user_id)}`)}
          onDone={() => {
            setRemoving(null);
            // Leaving changes your organizations: start again from your own.
            if (isMe(removing)) location.assign('/dashboard/');
            else list.reload();
          }}
          onCancel={() => setRemoving(null)}
        >
          <p>
            {isMe(removing)
              ? `You lose access to ${org.name} at once. Only a member with a role that manages members can invite you back.`
              : `${removing.email} loses access to ${org.name} at once. Their account and other organizations are not affected.`}
          </p>
        </Confirm>
      )}
    </>
  );
}

/**
 * A member's role: choosing another one in the list changes nothing until "Change role…" is
 * pressed and the change confirmed (one arrow key must not make an admin an owner).
 */
function RoleControl(props: {
  base: string;
  member: MemberRow;
  orgName: string;
  isMe: boolean;
  onChanged(): void;
}) {
  const { member } = props;
  const [role, setRole] = useState<Role>(member.role);
  const [confirming, setConfirming] = useState(false);
  const select = useRef<HTMLSelectElement>(null);
  /** Back to the role as it is; focus on the list (the buttons that opened the change go). */
  const keep = () => {
    setRole(member.role);
    requestAnimationFrame(() => select.current?.focus());
  };
  const changed = role !== member.role;
  const who = props.isMe ? 'your own role' : `the role of ${member.email}`;
  return (
    <form
      class="role-change"
      aria-label={`Role of ${member.email}`}
      onSubmit={(event) => {
        event.preventDefault();
        if (changed) setConfirming(true);
      }}
    >
      <label class="compact">
        <span class="visually-hidden">Role of {member.email}</span>
        <select
          ref={select}
          value={role}
          onChange={(event) => setRole(event.currentTarget.value as Role)}
        >
          {ROLES.map((option) => (
            <option key={option.value} value={option.value}>
              {option.value}
            </option>
          ))}
        </select>
      </label>
      {changed && (
        <>
          <button
            type="submit"
            class="secondary"
            aria-label={`Change role ${props.isMe ? '(your own)' : `of ${member.email}`} to ${role}…`}
          >
            Change role…
          </button>
          <button
            type="button"
            class="secondary"
            aria-label={`Keep ${who} as ${member.role}`}
            onClick={keep}
          >
            Keep
          </button>
        </>
      )}
      {confirming && (
        <Confirm
          title={
            props.isMe
              ? `Change your own role to ${role}?`
              : role === 'owner'
                ? `Make ${member.email} an owner?`
                : `Change ${member.email} to ${role}?`
          }
          confirmLabel={`Make ${props.isMe ? 'me' : 'them'} ${role}`}
          write={() => api.patch(`${props.base}/${encodeURIComponent(member.user_id)}`, { role })}
          onDone={() => {
            setConfirming(false);
            props.onChanged();
          }}
          onCancel={() => {
            setConfirming(false);
            keep();
          }}
        >
          <p>{roleChangeEffect(props.orgName, member, role, props.isMe)}</p>
        </Confirm>
      )}
    </form>
  );
}

/** What a role change does, as its confirmation says it. */
function roleChangeEffect(orgName: string, member: MemberRow, role: Role, isMe: boolean): string {
  const allows = ROLES.find((option) => option.value === role)?.may ?? role;
  if (isMe) {
    return `You are ${member.role} of ${orgName}; from now on you are ${role} (${allows}). Only an owner can give you a higher role back.`;
  }
  if (role === 'owner') {
    return `${member.email} may then manage every member and owner of ${orgName}, you included, and change or remove your role.`;
  }
  return `${member.email} is ${member.role} of ${orgName}; from now on they are ${role} (${allows}).`;
}

/**
 * Invites an e-mail with a role; whoever has (or later makes) an account with it accepts. The
 * invitation's link is shown once, for the inviter to send: where anyone may sign up, accepting
 * needs it (decision 365).
 */
function InviteMember(props: { path: string; mayInviteOwners: boolean; onInvited(): void }) {
  const [email, setEmail] = useState('');
  const [role, setRole] = useState<Role>('viewer');
  const chosen = ROLES.find((option) => option.value === role);
  const [sent, setSent] = useNotice<Invitation>();
  const [link, setLink] = useState<SentInvitation | null>(null);
  const action = useAction();
  return (
    <>
      {link && (
        <ShownOnce
          title={`Invitation link for ${link.email}`}
          value={link.accept_url}
          label="Invitation link"
          noun="link"
          warning={`gw sends no e-mail: send this link to ${link.email} yourself. gw keeps only a hash of it; if it is lost, revoke the invitation and invite again.`}
          onDone={() => setLink(null)}
        >
          <p class="muted small">
            {signUpOpen()
              ? 'Anyone may sign up on this gateway, so they accept with this link (or the token at its end) once signed in.'
              : 'They may also accept without it once signed in: accounts here are made by the operator.'}
          </p>
        </ShownOnce>
      )}
      <form
        class="card"
        aria-labelledby="invite-member-heading"
        onInput={action.clear}
        onSubmit={action.submit(
          () => api.create<SentInvitation>(props.path, { email, role }),
          (invitation) => {
            setEmail('');
            setSent(invitation);
            setLink(invitation);
            props.onInvited();
          },
        )}
      >
        <h2 id="invite-member-heading">Invite a member</h2>
        <p class="muted small">
          They see the invitation once they sign in with this e-mail (with the account they have, or
          one they make later) and join when they accept it. It stays open for {INVITATION_DAYS}{' '}
          days.
        </p>
        <div class="row">
          <label>
            E-mail
            <input
              type="email"
              name="invite-email"
              required
              value={email}
              onInput={(event) => setEmail(event.currentTarget.value)}
            />
          </label>
          <div class="field">
            <label for="invite-role">Role</label>
            <select
              id="invite-role"
              aria-describedby="invite-role-hint"
              value={role}
              onChange={(event) => setRole(event.currentTarget.value as Role)}
            >
              {ROLES.filter((option) => props.mayInviteOwners || option.value !== 'owner').map(
                (option) => (
                  <option key={option.value} value={option.value}>
                    {option.label}
                  </option>
                ),
              )}
            </select>
          </div>
          <button type="submit" disabled={action.busy}>
            {action.busy ? 'Inviting…' : 'Send invitation'}
          </button>
        </div>
        <p class="hint" id="invite-role-hint">
          {chosen && roleHint(chosen)}
        </p>
        <ErrorNote error={action.error} />
        <p class="muted small" role="status" aria-live="polite">
          {sent && `Invited ${sent.email} as ${sent.role}.`}
        </p>
      </form>
    </>
  );
}

/** The organization's open invitations, each revocable (an owner invitation by an owner). */
function PendingInvitationList(props: { list: Paged<Invitation>; orgRole: Role; orgName: string }) {
  const { list } = props;
  const [revoking, setRevoking] = useState<Invitation | null>(null);
  return (
    <section aria-labelledby="invitations-pending-heading">
      <h2 id="invitations-pending-heading">Pending invitations</h2>
      <ListTable
        list={list}
        rows={list.data}
        what="pending invitations"
        empty="No pending invitations."
        rowKey={(invitation) => invitation.id}
        columns={[
          { header: 'E-mail', cell: (invitation) => invitation.email },
          { header: 'Role', cell: (invitation) => <span class="role">{invitation.role}</span> },
          { header: 'Invited by', cell: (invitation) => invitation.invited_by_email ?? '—' },
          { header: 'Open until', cell: (invitation) => formatTime(invitation.expires_at) },
        ]}
        actions={(invitation) =>
          (invitation.role !== 'owner' || props.orgRole === 'owner') && (
            <RowButton
              label="Revoke…"
              name={`Revoke the invitation of ${invitation.email}`}
              danger
              onClick={() => setRevoking(invitation)}
            />
          )
        }
      />
      {revoking && (
        <Confirm
          title={`Revoke the invitation of ${revoking.email}?`}
          confirmLabel="Revoke invitation"
          write={() =>
            api.post(`/dashboard/api/invitations/${encodeURIComponent(revoking.id)}/revoke`)
          }
          onDone={() => {
            setRevoking(null);
            list.reload();
          }}
          onCancel={() => setRevoking(null)}
        >
          <p>
            {revoking.email} can no longer accept it and join {props.orgName}. You can invite them
            again afterwards.
          </p>
        </Confirm>
      )}
    </section>
  );
}
