// gw admin create-user: a dashboard user (with a personal organization), optionally a member
// of an existing organization. Invitations by e-mail are not built: print the sign-in URL.
import { AccountRuleError, createUser, ROLES, type Role } from '../accounts/users.js';
import type { CliContext } from './context.js';
import { parseFlags, printJson, requireFlag, UsageError } from './output.js';

export const adminHelp = `gw admin create-user --email E --password P [--org-id ORG --role owner|admin|member|viewer]
  Creates a dashboard user with a personal organization (and wallet) they own; with --org-id
  also a member of that organization (role default member). Prints {"user_id","email",
  "personal_org_id","org_ids"}. Passwords: 12 to 256 characters.`;

export async function adminCommand(context: CliContext, argv: string[]): Promise<void> {
  const [action, ...rest] = argv;
  const { values } = parseFlags(rest, {
    email: { type: 'string' },
    password: { type: 'string' },
    'org-id': { type: 'string' },
    role: { type: 'string' },
  });
  if (action !== 'create-user')
    throw new UsageError('usage: gw admin create-user --email E --password P');
  const role = values.role;
  if (role !== undefined && !(ROLES as readonly string[]).includes(role)) {
    throw new UsageError(`--role must be one of ${ROLES.join(', ')}`);
  }
  if (role !== undefined && values['org-id'] === undefined) {
    throw new UsageError('--role needs --org-id (the personal organization is always owned)');
  }
  try {
    printJson(
      await createUser(context.db, {
        email: requireFlag(values.email, 'email'),
        password: requireFlag(values.password, 'password'),
        ...(values['org-id'] !== undefined && { orgId: values['org-id'] }),
        ...(role !== undefined && { role: role as Role }),
      }),
    );
  } catch (error) {
    if (error instanceof AccountRuleError) throw new UsageError(error.message);
    throw error;
  }
}
