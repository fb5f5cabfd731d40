// Authenticates dashboard callers: the session cookie, and for writes the session's CSRF
// token and an allowed Origin (sign-in and sign-up, which have no session yet, the Origin);
// then, for routes on an organization's objects, membership of the organization that owns
// the object and a high enough role. An object of another organization answers 404 exactly
// like one that does not exist, so ids cannot be probed.
import type { Actor } from '../audit/audit.js';
import type { DbPool } from '../db/pool.js';
import { gwError, type GwError } from '../errors.js';
import { isWriteMethod } from '../http/methods.js';
import { requestOrigin } from '../http/own-origin.js';
import type { RequestHead } from '../http/types.js';
import { isObjectIdForm } from '../object-ids.js';
import { csrfTokenMatches, type Session, type SessionStore } from './sessions.js';
import {
  loadDashboardUser,
  roleAtLeast,
  type DashboardUser,
  type Membership,
  type Role,
} from './users.js';

/** The tables whose rows belong to one organization (an `org_id` column). */
export type OwnedTable =
  | 'organizations'
  | 'apps'
  | 'app_connections'
  | 'api_keys'
  | 'service_keys'
  | 'product_users'
  | 'credit_grants'
  | 'provider_credentials'
  | 'oauth_clients'
  | 'org_invitations';

/** What a not-found answer calls an object of each table. */
const OBJECT_NOUNS: Readonly<Record<OwnedTable, string>> = {
  organizations: 'organization',
  apps: 'app',
  app_connections: 'connection',
  api_keys: 'API key',
  service_keys: 'service key',
  product_users: 'product user',
  credit_grants: 'credit grant',
  provider_credentials: 'provider credential',
  oauth_clients: 'OAuth client',
  org_invitations: 'invitation',
};

/** Where a route's path names the object, and which table it lives in. */
export interface OrgLocator {
  readonly param: string;
  readonly table: OwnedTable;
}

export interface DashboardCaller {
  readonly user: DashboardUser;
  readonly session: Session;
  /** The user, as the audit log names who made a change. */
  readonly actor: Actor;
}

export interface OrgMemberCaller extends DashboardCaller {
  /** The organization that owns the object the path names, with the caller's role in it. */
  readonly org: Membership;
}

export const CSRF_HEADER = 'x-csrf-token';
/** How much of a refused Origin the error repeats (an origin is short; a hostile one need not be). */
const ORIGIN_SHOWN_MAX = 200;

export interface DashboardAuthSettings {
  /** Origins besides the gateway's own that may send dashboard writes. */
  readonly allowedOrigins: readonly string[];
  /** Plain-HTTP development: the gateway's own origin is http://<host>, else https://<host>. */
  readonly insecure: boolean;
  /**
   * gw sends e-mail (SMTP_URL): an account whose address is not verified may make only the
   * writes its route allows them (decision 370).
   */
  readonly verificationRequired?: boolean;
}

export class DashboardAuthenticator {
  constructor(
    private readonly db: DbPool,
    private readonly sessions: SessionStore,
    private readonly settings: DashboardAuthSettings,
  ) {}

  /**
   * `csrfInBody`: a write whose CSRF token comes in its form body (an HTML form cannot set
   * headers); the router checks it once the body is read. The Origin is checked here still.
   */
  async session(
    head: RequestHead,
    options: { readonly csrfInBody?: boolean; readonly unverifiedAllowed?: boolean } = {},
  ): Promise<DashboardCaller | GwError> {
    const id = this.sessions.idFromCookieHeader(head.headers.cookie);
    if (!id)
      return gwError('gw_session_required', 'sign in first: this route needs a dashboard session');
    const session = await this.sessions.find(id);
    if (!session)
      return gwError('gw_session_required', 'the dashboard session expired; sign in again');
    if (isWriteMethod(head.method)) {
      const refusal = this.writeRefusal(head, session, options.csrfInBody === true);
      if (refusal) return refusal;
    }
    const user = await loadDashboardUser(this.db, session.userId);
    if (!user) {
      await this.sessions.destroy(session);
      return gwError('gw_session_required', 'the dashboard session expired; sign in again');
    }
    // Ended with all the user's sessions (a password change, sign-out everywhere), whether or
    // not its Redis entry was deleted yet (src/accounts/user-sessions.ts).
    if (session.epoch !== user.sessionEpoch) {
      await this.sessions.destroy(session);
      return gwError(
        'gw_session_required',
        "the dashboard session was ended (the account's password changed, or all its sessions were signed out); sign in again",
      );
    }
    if (
      this.settings.verificationRequired === true &&
      !user.emailVerified &&
      isWriteMethod(head.method) &&
      options.unverifiedAllowed !== true
    ) {
      return gwError(
        'gw_email_unverified',
        `verify your e-mail address first: open the link sent to ${user.email} (or send a new one from the dashboard)`,
      );
    }
    return { user, session, actor: { userId: user.id } };
  }

  async orgMember(
    head: RequestHead,
    role: Role,
    locator: OrgLocator,
  ): Promise<OrgMemberCaller | GwError> {
    const caller = await this.session(head);
    if ('code' in caller) return caller;
    const objectId = head.params[locator.param] ?? '';
    // an id of another form than the gateway issues cannot name an object
    const orgId = isObjectIdForm(objectId) ? await this.ownerOf(locator.table, objectId) : null;
    const org = orgId
      ? caller.user.memberships.find((membership) => membership.id === orgId)
      : undefined;
    if (!org)
      return gwError(
        'gw_not_found',
        `no ${OBJECT_NOUNS[locator.table]} with this id in your organizations`,
      );
    if (!roleAtLeast(org.role, role)) {
      return gwError(
        'gw_role_forbidden',
        `this needs the ${role} role or higher in the organization; yours is ${org.role}`,
      );
    }
    return { ...caller, org };
  }

  /**
   * A dashboard write before sign-in (sign-in, sign-up): no session yet, but the Origin is
   * checked as for every dashboard write, so another site cannot sign a browser in to an
   * account of its choosing (login CSRF). Null when it may go on.
   */
  visitor(head: RequestHead): Promise<null | GwError> {
    return Promise.resolve(isWriteMethod(head.method) ? this.originRefusal(head) : null);
  }

  /** Why a dashboard write's Origin is refused (missing, or not allowed), or null. */
  private originRefusal(head: RequestHead): GwError | null {
    const origin = head.headers.origin;
    const own = requestOrigin(head.headers, this.settings.insecure);
    if (!origin || (origin !== own && !this.settings.allowedOrigins.includes(origin))) {
      return gwError('gw_origin_not_allowed', this.originMessage(origin, own));
    }
    return null;
  }

  /** The refusal names the origins it takes (none of them secret) and the one it was sent. */
  private originMessage(origin: string | undefined, own: string): string {
    const expected = [own, ...this.settings.allowedOrigins].join(', ');
    const sent = origin ? `Origin ${origin.slice(0, ORIGIN_SHOWN_MAX)}` : 'no Origin header';
    const plainHttp =
      !this.settings.insecure && origin === own.replace(/^https:/, 'http:')
        ? ' (a plain-HTTP local gateway: start it with DASHBOARD_INSECURE_COOKIES=true)'
        : '';
    return `dashboard writes must come from the gateway's own origin or one in DASHBOARD_ALLOWED_ORIGINS: expected ${expected}; this request sent ${sent}${plainHttp}`;
  }

  /** Why a write is refused (Origin first, then the CSRF token), or null when it may go on. */
  private writeRefusal(head: RequestHead, session: Session, csrfInBody: boolean): GwError | null {
    const originRefusal = this.originRefusal(head);
    if (originRefusal) return originRefusal;
    if (!csrfInBody && !csrfTokenMatches(head.headers[CSRF_HEADER], session.csrfToken)) {
      return gwError(
        'gw_csrf_token_invalid',
        'send the X-CSRF-Token header with the current value from GET /auth/csrf',
      );
    }
    return null;
  }

  private async ownerOf(table: OwnedTable, id: string): Promise<string | null> {
    if (table === 'organizations') return id;
    // `table` is one of the fixed names above, never input.
    const { rows } = await this.db.query<{ org_id: string }>(
      `SELECT org_id FROM ${table} WHERE id = $1`,
      [id],
    );
    return rows[0]?.org_id ?? null;
  }
}
