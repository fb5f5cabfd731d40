// gw admin create-user | add-member | set-password | end-sessions: dashboard users, their
// organizations, passwords and sessions. The operator is trusted (they can read the accounts
// anyway), so the CLI adds an existing user at once where the dashboard sends an invitation
// the user accepts (decision 359). A membership the CLI makes is audited as the operator's
// (`cli`).
import { addMember, memberView, MembershipError } from '../accounts/members.js';
import {
  AccountRuleError,
  createUser,
  dashboardUserView,
  loadDashboardUser,
  ROLES,
  type Role,
} from '../accounts/users.js';
import { adminSessionsHelp, endSessionsCommand, setPasswordCommand } from './admin-sessions.js';
import { CLI_ACTOR, requireOrganization, type CliContext } from './context.js';
import { parseFlags, printJson, requireFlag, UsageError } from './output.js';
import { readPassword } from './password-input.js';

export const adminHelp = `gw admin create-user --email E --password-stdin [--org-id ORG --role owner|admin|member|viewer]
  Creates a dashboard user with a personal organization (and wallet) they own; with --org-id
  also a member of that organization (role default member). Prints the dashboard API's user
  object, {"id","email","personal_org_id","email_verified"}, with "org_ids": the
  organizations they are in. Passwords: 12 to 256 characters, from standard input with
  --password-stdin (one line), or asked for twice at a terminal; --password P still works but
  warns (other users of the machine see it in the process list). An e-mail that already has a
  user is refused: add that user to an organization with add-member.
gw admin add-member --email E --org-id ORG [--role owner|admin|member|viewer]
  Makes an existing dashboard user a member of the organization at once (role default
  member); the dashboard's members page invites instead, and the user accepts. Their password
  is not touched. Prints the dashboard API's member object, {"user_id","email","role",
  "personal_organization","created_at"}. A user who is already a member is refused (change a
  role on the members page).
${adminSessionsHelp}`;

const ACTIONS = ['create-user', 'add-member', 'set-password', 'end-sessions'];
const USAGE =
  'usage: gw admin create-user --email E --password-stdin [--org-id ORG --role R] | gw admin add-member --email E --org-id ORG [--role R] | gw admin set-password --email E [--password-stdin] | gw admin end-sessions --email E';

export async function adminCommand(context: CliContext, argv: string[]): Promise<void> {
  const [action, ...rest] = argv;
  const { values } = parseFlags(rest, {
    email: { type: 'string' },
    password: { type: 'string' },
    'password-stdin': { type: 'boolean' },
    'org-id': { type: 'string' },
    role: { type: 'string' },
  });
  if (action === undefined || !ACTIONS.includes(action)) throw new UsageError(USAGE);
  if (action === 'set-password' || action === 'end-sessions') {
    if (values.password !== undefined) {
      throw new UsageError(
        `${action} takes no --password: arguments show in the process list and shell history; pipe it with --password-stdin or type it at the prompt`,
      );
    }
    const extra = ['org-id', 'role', ...(action === 'end-sessions' ? ['password-stdin'] : [])];
    const given = extra.find((name) => values[name as keyof typeof values] !== undefined);
    if (given) throw new UsageError(`${action} takes no --${given}`);
    const email = requireFlag(values.email, 'email');
    if (action === 'end-sessions') return endSessionsCommand(context, email);
    return setPasswordCommand(context, email, values['password-stdin'] === true);
  }
  const role = values.role;
  if (role !== undefined && !(ROLES as readonly string[]).includes(role)) {
    throw new UsageError(`--role must be one of ${ROLES.join(', ')}`);
  }
  if (action === 'add-member') {
    if (values.password !== undefined || values['password-stdin'] !== undefined) {
      throw new UsageError('add-member takes no --password: the user keeps the one they have');
    }
    await addMemberCommand(context, {
      email: requireFlag(values.email, 'email'),
      orgId: requireFlag(values['org-id'], 'org-id'),
      role: (role ?? 'member') as Role,
    });
    return;
  }
  if (role !== undefined && values['org-id'] === undefined) {
    throw new UsageError('--role needs --org-id (the personal organization is always owned)');
  }
  const email = requireFlag(values.email, 'email');
  const password = await readPassword('create-user', {
    fromStdin: values['password-stdin'] === true,
    argument: values.password,
  });
  let created;
  try {
    created = await createUser(context.db, {
      email,
      password,
      ...(values['org-id'] !== undefined && {
        membership: {
          orgId: values['org-id'],
          role: (role ?? 'member') as Role,
          actor: CLI_ACTOR,
        },
      }),
    });
  } catch (error) {
    if (error instanceof AccountRuleError && error.conflict) {
      throw new UsageError(
        `${error.message} (to add that user to an organization: gw admin add-member --email E --org-id ORG --role R)`,
        'gw_conflict',
      );
    }
    if (error instanceof AccountRuleError) throw new UsageError(error.message);
    throw error;
  }
  const user = (await loadDashboardUser(context.db, created.user_id))!;
  printJson({ ...dashboardUserView(user), org_ids: created.org_ids });
}

async function addMemberCommand(
  context: CliContext,
  input: { readonly email: string; readonly orgId: string; readonly role: Role },
): Promise<void> {
  await requireOrganization(context, input.orgId);
  try {
    // The operator may make anyone anything: an owner's rights.
    const member = await addMember(
      context.db,
      { ...CLI_ACTOR, role: 'owner' },
      input.orgId,
      input.email,
      input.role,
    );
    printJson(memberView(member));
  } catch (error) {
    if (error instanceof MembershipError) {
      const code = error.kind === 'not_found' ? 'gw_not_found' : 'gw_conflict';
      const hint = error.kind === 'not_found' ? ' (create one with gw admin create-user)' : '';
      throw new UsageError(`${error.message}${hint}`, code);
    }
    throw error;
  }
}
