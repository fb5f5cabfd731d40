// Members of the organization: their roles; add by e-mail, change a role, remove or leave.
import { useState } from 'preact/hooks';
import { api, canManage, type OrgSummary, type Role, type SignedIn } from '../api.js';
import { useAction, usePaged } from '../hooks.js';
import { Confirm, ErrorNote, formatTime, ListTable, PageHeader, RowButton } from '../ui.js';
import type { OrgPage } from './page.js';

interface MemberRow {
  readonly user_id: string;
  readonly email: string;
  readonly role: Role;
  readonly created_at: string;
}

const ROLES: readonly { value: Role; label: string }[] = [
  { value: 'viewer', label: 'Viewer: reads everything' },
  { value: 'member', label: 'Member: also uses it' },
  { value: 'admin', label: 'Admin: also manages apps, connections and keys' },
  { value: 'owner', label: 'Owner: also manages members and owners' },
];

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
  const isMe = (member: MemberRow) => member.user_id === session.user.id;
  return (
    <>
      <PageHeader title="Members">
        Who can use the dashboard for {org.name}, and what each may do.
      </PageHeader>
      {manage && <AddMember base={base} onAdded={list.reload} />}
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
                manage ? (
                  <RoleSelect base={base} member={member} onChanged={list.reload} />
                ) : (
                  <span class="role">{member.role}</span>
                ),
            },
            { header: 'Member since', cell: (member) => formatTime(member.created_at) },
          ]}
          actions={(member) =>
            (manage || isMe(member)) && (
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
              ? `You lose access to ${org.name} at once. Only a member with a role that manages members can add you back.`
              : `${removing.email} loses access to ${org.name} at once. Their account and other organizations are not affected.`}
          </p>
        </Confirm>
      )}
    </>
  );
}

function RoleSelect(props: { base: string; member: MemberRow; onChanged(): void }) {
  const action = useAction();
  return (
    <div>
      <label class="compact">
        <span class="visually-hidden">Role of {props.member.email}</span>
        <select
          value={props.member.role}
          disabled={action.busy}
          onChange={(event) => {
            const role = event.currentTarget.value as Role;
            void action
              .run(() =>
                api.patch(`${props.base}/${encodeURIComponent(props.member.user_id)}`, { role }),
              )
              .then((done) => {
                if (done) props.onChanged();
                else event.currentTarget.value = props.member.role;
              });
          }}
        >
          {ROLES.map((role) => (
            <option key={role.value} value={role.value}>
              {role.value}
            </option>
          ))}
        </select>
      </label>
      <ErrorNote error={action.error} />
    </div>
  );
}

function AddMember({ base, onAdded }: { base: string; onAdded(): void }) {
  const [email, setEmail] = useState('');
  const [role, setRole] = useState<Role>('viewer');
  const action = useAction();
  return (
    <form
      class="card"
      aria-labelledby="add-member-heading"
      onSubmit={action.submit(
        () => api.post(base, { email, role }),
        () => {
          setEmail('');
          onAdded();
        },
      )}
    >
      <h2 id="add-member-heading">Add a member</h2>
      <p class="muted small">They need a dashboard account already; add them by its e-mail.</p>
      <div class="row">
        <label>
          E-mail
          <input
            type="email"
            name="member-email"
            required
            value={email}
            onInput={(event) => setEmail(event.currentTarget.value)}
          />
        </label>
        <div class="field">
          <label for="member-role">Role</label>
          <select
            id="member-role"

            value={role}
            onChange={(event) => setRole(event.currentTarget.value as Role)}
          >
            {ROLES.map((option) => (
              <option key={option.value} value={option.value}>
                {option.label}
              </option>
            ))}
          </select>
        </div>
        <button type="submit" disabled={action.busy}>
          {action.busy ? 'Adding…' : 'Add member'}
        </button>
      </div>
      <ErrorNote error={action.error} />
    </form>
  );
}
