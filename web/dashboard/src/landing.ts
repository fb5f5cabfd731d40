// Where a signed-in user lands (no DOM: tested without a browser). A user an operator added to
// an organization also has a personal one, usually empty: the organization they last used in
// this browser comes first, then the first one that is not their personal organization
// (docs/decisions.md, 337).
import { parseView } from './views.js';

export interface LandingSession {
  readonly user: { readonly personal_org_id: string };
  readonly orgs: readonly { readonly id: string }[];
}

/** The organization to open after signing in (null: the user belongs to none). */
export function landingOrgId(session: LandingSession, lastUsedOrgId: string | null): string | null {
  const { orgs, user } = session;
  if (lastUsedOrgId !== null && orgs.some((org) => org.id === lastUsedOrgId)) {
    return lastUsedOrgId;
  }
  const shared = orgs.find((org) => org.id !== user.personal_org_id);
  return (shared ?? orgs[0])?.id ?? null;
}

/**
 * The sign-in page's way back (`?next=`), unless it opens an organization the user signing in
 * is not a member of: a link another user left (their session ended on their organization's
 * page) leads to this user's own landing organization instead.
 */
export function usableReturnPath(path: string | null, session: LandingSession): string | null {
  if (path === null || !path.startsWith('/dashboard/')) return path;
  const view = parseView(path.split(/[?#]/)[0] ?? path);
  if (view.page !== 'org') return path;
  return session.orgs.some((org) => org.id === view.orgId) ? path : null;
}
