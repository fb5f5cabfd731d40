// A route is declared once: method, path, who may call it, the request and response schemas,
// the error codes it answers with, and its handler. The router (bind.ts), the auth step and
// /openapi.json (src/openapi/document.ts) are all derived from these declarations, so a new
// route cannot forget its authentication, its validation or its documentation.
import type { z } from 'zod';
import type { ApiKeyIdentity } from '../../auth/api-key-store.js';
import type { ServiceKeyIdentity, ServiceKeyScope } from '../../auth/service-key-store.js';
import type {
  DashboardCaller,
  OrgLocator,
  OrgMemberCaller,
} from '../../accounts/dashboard-auth.js';
import type { Role } from '../../accounts/users.js';
import type { ErrorCode, ErrorFlavor, GwError } from '../../errors.js';
import type { HttpRequest, HttpResponse, RequestHead } from '../../http/types.js';
import type { OAuthClientIdentity } from '../../oauth/clients.js';

/** Who may call a route. Each kind has one authenticator (see Authenticators). */
export type CallerRequirement =
  | { readonly kind: 'none' }
  /**
   * A browser on the dashboard before it has a session (sign-in, sign-up): no session, but
   * a write must come from an allowed Origin like every dashboard write (login CSRF).
   */
  | { readonly kind: 'dashboard_visitor' }
  | { readonly kind: 'api_key' }
  | { readonly kind: 'service_key'; readonly scope: ServiceKeyScope }
  /**
   * Any signed-in dashboard user (writes also need the CSRF token and an allowed Origin).
   * `csrf: 'form'`: the token comes in the form body's `csrf_token` field instead of the
   * X-CSRF-Token header (a server-rendered HTML form cannot set headers).
   * `unverified: 'allowed'`: a write an account whose e-mail address is not verified yet may
   * make (its own password, signing out, a new verification link); every other dashboard
   * write answers it 403 gw_email_unverified while gw sends e-mail (decision 370).
   */
  | {
      readonly kind: 'session';
      readonly csrf?: 'header' | 'form';
      readonly unverified?: 'allowed';
    }
  /**
   * The signed-in dashboard user, or null when there is none (a page that sends a stranger
   * to the sign-in page and back). GET routes only: writes need a session.
   */
  | { readonly kind: 'optional_session' }
  /**
   * An OAuth client (RFC 6749 section 2.3): `client_id` in the form body, and for a
   * confidential client its `client_secret` in the body or as HTTP Basic. Authenticated once
   * the (form) body is read, since the credentials may be in it.
   */
  | { readonly kind: 'oauth_client' }
  /**
   * A signed-in member of the organization that owns the object the path names, with at
   * least `role`. Objects of other organizations answer 404, as if they did not exist.
   */
  | { readonly kind: 'org_member'; readonly role: Role; readonly org: OrgLocator };

/** The authenticated caller a handler receives for a requirement. */
export type CallerOf<Requirement extends CallerRequirement> = Requirement extends {
  kind: 'api_key';
}
  ? ApiKeyIdentity
  : Requirement extends { kind: 'service_key' }
    ? ServiceKeyIdentity
    : Requirement extends { kind: 'session' }
      ? DashboardCaller
      : Requirement extends { kind: 'optional_session' }
        ? DashboardCaller | null
        : Requirement extends { kind: 'org_member' }
          ? OrgMemberCaller
          : Requirement extends { kind: 'oauth_client' }
            ? OAuthClientIdentity
            : null;

/** One authenticator per caller kind, built by the composition root. */
export interface Authenticators {
  apiKey(headers: Readonly<Record<string, string>>): Promise<ApiKeyIdentity | GwError>;
  serviceKey(
    headers: Readonly<Record<string, string>>,
    scope: ServiceKeyScope,
  ): Promise<ServiceKeyIdentity | GwError>;
  /**
   * `csrfInBody`: a write whose CSRF token the router checks in its form body instead;
   * `unverifiedAllowed`: a write an account with an unverified address may make.
   */
  session(
    head: RequestHead,
    options?: { readonly csrfInBody?: boolean; readonly unverifiedAllowed?: boolean },
  ): Promise<DashboardCaller | GwError>;
  orgMember(head: RequestHead, role: Role, org: OrgLocator): Promise<OrgMemberCaller | GwError>;
  /** A dashboard write without a session: null when its Origin is allowed. */
  dashboardVisitor(head: RequestHead): Promise<null | GwError>;
  /** Runs once the body is parsed: the client's credentials may be form fields. */
  oauthClient(
    headers: Readonly<Record<string, string>>,
    form: Readonly<Record<string, unknown>>,
  ): Promise<OAuthClientIdentity | GwError>;
}

/** The error codes a caller kind can answer with before the handler runs. */
export const callerErrors: Readonly<Record<CallerRequirement['kind'], readonly ErrorCode[]>> = {
  none: [],
  dashboard_visitor: ['gw_origin_not_allowed'],
  api_key: ['gw_malformed_or_missing_key', 'gw_unknown_key', 'gw_key_inactive', 'gw_unavailable'],
  service_key: [
    'gw_malformed_or_missing_service_key',
    'gw_unknown_service_key',
    'gw_service_key_inactive',
    'gw_service_key_scope_required',
    'gw_unavailable',
  ],
  session: [
    'gw_session_required',
    'gw_csrf_token_invalid',
    'gw_origin_not_allowed',
    'gw_email_unverified',
  ],
  optional_session: [],
  oauth_client: ['gw_oauth_invalid_client'],
  org_member: [
    'gw_session_required',
    'gw_csrf_token_invalid',
    'gw_origin_not_allowed',
    'gw_not_found',
    'gw_role_forbidden',
    'gw_email_unverified',
  ],
};

/** The error codes a JSON body can answer with before the handler runs. */
export const bodyErrors: readonly ErrorCode[] = [
  'gw_invalid_json',
  'gw_invalid_request',
  'gw_body_too_large',
];

/** The codes a route declared `idempotent: true` adds: a bad key, a key reused, one running. */
export const idempotencyErrors: readonly ErrorCode[] = [
  'gw_invalid_request',
  'gw_idempotency_key_reused',
  'gw_conflict',
];

/** The error codes a form-encoded body can answer with before the handler runs. */
export const formBodyErrors: readonly ErrorCode[] = ['gw_invalid_request', 'gw_body_too_large'];

/**
 * How a body is encoded: JSON, or `application/x-www-form-urlencoded` (OAuth's endpoints,
 * RFC 6749 section 3.2, and HTML forms). A form is read as an object of strings, each
 * parameter at most once (RFC 6749 section 3.1), then validated against the body schema.
 */
export type BodyEncoding = 'json' | 'form';

export interface ResponseDoc {
  readonly description: string;
  /** The JSON body's schema; omitted for free-form answers. */
  readonly schema?: z.ZodType;
  /**
   * What the events are, for a status that can be a Server-Sent Events stream instead of (or
   * besides) a JSON body: documented as `text/event-stream`, a string with this description.
   */
  readonly eventStream?: string;
}

/** The names of a path's `{name}` segments (and of a last catch-all `{name*}`). */
type ParamNames<Path extends string> = Path extends `${string}{${infer Name}}${infer Rest}`
  ? (Name extends `${infer Tail}*` ? Tail : Name) | ParamNames<Rest>
  : never;

/**
 * A path's parameters, typed from the path itself: `'/apps/{app_id}'` gives `{ app_id: string }`.
 * The router matched every one of them, so each is present.
 */
export type PathParams<Path extends string> = { readonly [Name in ParamNames<Path>]: string };

/**
 * What a handler is called with: the request, its path parameters, the authenticated caller,
 * the parsed body and query, and the response, for the routes that write their answer
 * themselves (streams, pages, files, redirects).
 */
export interface RouteCall<Caller, Body, Params = PathParams<string>, Query = unknown> {
  readonly request: HttpRequest;
  readonly params: Params;
  readonly caller: Caller;
  readonly body: Body;
  /** The declared query parameters, parsed; undefined when the route declares none. */
  readonly query: Query;
  readonly response: HttpResponse;
}

/**
 * A JSON answer whose status is chosen when the handler runs (201 created, 200 replayed), or
 * whose headers are not the plain JSON ones (OAuth's never-cached answers).
 */
export class JsonAnswer {
  constructor(
    readonly status: number,
    readonly body: unknown,
    readonly headers?: Readonly<Record<string, string>>,
  ) {}
}

/** The body with its own status (and headers, else the plain JSON ones). */
export function answer(
  status: number,
  body: unknown,
  headers?: Readonly<Record<string, string>>,
): JsonAnswer {
  return new JsonAnswer(status, body, headers);
}

/**
 * What a handler's promise resolves to, and what the router writes for it:
 * - a GwError (returned, or thrown by anything the handler calls): the error, in the route's
 *   flavor;
 * - a JsonAnswer: its body as JSON, with its status;
 * - undefined: nothing, the handler wrote its answer itself through `response`;
 * - any other value: that body as JSON, with the route's first declared status.
 */
export type RouteResult = unknown;

/** A request the router refused before its handler, as a route's `onRefused` sees it. */
export interface RefusedRequest {
  readonly request: RequestHead;
  /**
   * The body as sent (unparsed: it may be what was refused); null when it was not read, or
   * not all of it (too large, or refused for its head before it was read).
   */
  readonly rawBody: Buffer | null;
  readonly refusal: GwError;
}

type BodyOf<Schema> = Schema extends z.ZodType ? z.infer<Schema> : undefined;

/**
 * What the router does with query parameters a route does not declare: refuses them (400
 * gw_invalid_request, the default for a route that declares `query`), or ignores them
 * (`'ignored'`).
 */
export type UnknownQueryParameters = 'ignored';

/** The handler's `query`: the declared schema's value, parsed by the router (else undefined). */
type QueryOf<Schema, UnknownNames> = UnknownNames extends 'ignored'
  ? undefined
  : Schema extends z.ZodObject
    ? z.infer<Schema>
    : undefined;

/** What a declared route's handler (and its finishing of a committed request) is called with. */
export type DeclaredCall<
  Requirement extends CallerRequirement,
  BodySchema extends z.ZodType | undefined,
  Path extends string,
  QuerySchema extends z.ZodObject | undefined,
  UnknownNames extends UnknownQueryParameters | undefined,
> = RouteCall<
  CallerOf<Requirement>,
  BodyOf<BodySchema>,
  PathParams<Path>,
  QueryOf<QuerySchema, UnknownNames>
>;

export interface RouteDeclaration<
  Requirement extends CallerRequirement = CallerRequirement,
  BodySchema extends z.ZodType | undefined = z.ZodType | undefined,
  Deps = never,
  Path extends string = string,
  QuerySchema extends z.ZodObject | undefined = z.ZodObject | undefined,
  UnknownNames extends UnknownQueryParameters | undefined = UnknownQueryParameters | undefined,
> {
  readonly method: 'GET' | 'POST' | 'PUT' | 'DELETE' | 'PATCH';
  /** `{name}` segments are parameters; the handler gets them typed as `params`. */
  readonly path: Path;
  /** One line for /openapi.json. */
  readonly summary: string;
  /** The /openapi.json section (tag) that groups it: set for a whole list in routes/index.ts. */
  readonly section?: RouteSection;
  readonly caller: Requirement;
  /**
   * Request headers the handler reads (by their lower-case names in `request.headers`), for
   * /openapi.json: the router does not parse them.
   */
  readonly headers?: z.ZodObject;
  /** The JSON body, validated before the handler runs (400 with the field path otherwise). */
  readonly body?: BodySchema;
  /** The body's encoding (default JSON). */
  readonly bodyEncoding?: BodyEncoding;
  /** An empty body stands for `{}` (for bodies whose every field is optional). */
  readonly bodyOptional?: boolean;
  /**
   * Top-level JSON body fields the spec gives their own error code (`app_id`:
   * gw_invalid_app_id): a body refused for one of them (missing, wrong type) answers it.
   */
  readonly bodyFieldErrors?: Readonly<Record<string, ErrorCode>>;
  /**
   * The query parameters, parsed and validated by the router before the handler runs, which
   * gets them typed as `query`: each name at most once, no name the schema lacks (decision
   * 368), 400 gw_invalid_request naming the first problem otherwise (decision 380).
   */
  readonly query?: QuerySchema;
  /**
   * Query parameters the spec gives their own error code (`app_id`: gw_invalid_app_id): a query
   * refused for one of them (missing) answers it, as `bodyFieldErrors` does for a body.
   */
  readonly queryFieldErrors?: Readonly<Record<string, ErrorCode>>;
  /**
   * `'ignored'`: the route takes query parameters it does not declare and ignores them, and the
   * router neither parses nor refuses its query string; the handler reads `request.query`
   * itself, if at all (`query` then only documents what it reads), and /openapi.json says so.
   * For the OAuth authorization endpoint (RFC 6749 section 3.1; it also answers a repeated
   * parameter its own way) and the inference routes (vendor SDKs add parameters of their own,
   * such as `api-version`, which the vendors ignore too).
   */
  readonly unknownQueryParameters?: UnknownNames;
  readonly responses: Readonly<Record<number, ResponseDoc>>;
  /** Codes the handler itself answers with (the caller's and the body's are added); none if left out. */
  readonly errors?: readonly ErrorCode[];
  /** How errors are dressed (the messages protocol adds its `type` fields). */
  readonly errorFlavor?: ErrorFlavor | ((headers: Readonly<Record<string, string>>) => ErrorFlavor);
  /**
   * The answer carries a secret (a raw key, a signing or client secret, a token) or a person's
   * profile: the router sends every answer of the route with `Cache-Control: no-store`, and
   * /openapi.json says so.
   */
  readonly answerCarriesSecret?: boolean;
  /**
   * The route takes an Idempotency-Key header (documented in /openapi.json). `true`: the router
   * runs the handler once per key of the caller's organization and replays its first answer
   * (src/routes/framework/idempotent.ts, decision 372): for creates of org_member and
   * service_key callers. `'handler'`: the handler honours the key itself (credit grants, keyed
   * per product user).
   */
  readonly idempotent?: true | 'handler';
  /**
   * For a route declared `idempotent: true` whose change commits before steps that can still
   * fail (the wallet top-up: its Redis step): how a retry with the key finishes a first
   * request that committed its change, then failed before answering or stopped (its lease
   * lapsed: decision 576), rather than answer 409 (decision 542). `effectOf` names what a transaction of the handler commits, from what its
   * work returned (undefined for one it does not name); the name is kept with the key, in that
   * transaction. `answer` finishes that request (what it left undone, never a second change)
   * and answers what the route answers on success; that answer is then kept for the key. A
   * route without it keeps the 409: re-reading what a create made is not its answer (a secret
   * shown once, a name changed since).
   */
  readonly finishesCommitted?: {
    effectOf(committed: unknown): string | undefined;
    answer(
      effectRef: string,
      call: DeclaredCall<Requirement, BodySchema, Path, QuerySchema, UnknownNames>,
      deps: Deps,
    ): Promise<RouteResult>;
  };
  /** Left out of /openapi.json (operational routes that are not part of the API). */
  readonly undocumented?: boolean;
  /**
   * A GET catch-all (`{name*}`) that takes only the paths no other route has: other methods
   * there answer 404, not 405 (see Route.fallback in src/http/types.ts).
   */
  readonly fallback?: boolean;
  /**
   * The route reads the client address (`request.remoteAddress`: the sign-in, sign-up, password
   * and e-mailed-link throttles). The HTTP adapter reads it as the request arrives, so a handler
   * gets it after any await, the client gone or not (decision 471); another route that reads it
   * fails (500): formatting it costs microseconds the inference routes do not pay.
   */
  readonly readsClientAddress?: boolean;
  /**
   * Runs when the request is refused before its handler (its body, an OAuth client's
   * authentication, or in the HTTP adapter before the body is read: too large, its framing, a
   * header sent twice, a query parameter), with the raw body if it was read: for what an
   * attempt must do whatever its outcome (spend the authorization code it presents). Not for
   * a caller refused by its authenticator (an Origin, a session, a key), nor when the gateway
   * is shutting down (the client is told to retry). An error it returns is the answer
   * instead of the refusal.
   */
  onRefused?(refused: RefusedRequest, deps: Deps): Promise<GwError | undefined>;
  // A method, not a function property: a list of routes with different callers and bodies
  // is then one array type (their handlers are checked where each route is declared).
  handler(
    call: DeclaredCall<Requirement, BodySchema, Path, QuerySchema, UnknownNames>,
    deps: Deps,
  ): Promise<RouteResult> | RouteResult;
}

/** Any declared route whose handler can be given `Deps`. */
export type DeclaredRoute<Deps> = RouteDeclaration<CallerRequirement, z.ZodType | undefined, Deps>;

/**
 * Declares a route, inferring its caller, body, query and path-parameter types for the
 * handler.
 */
export function declareRoute<
  Requirement extends CallerRequirement,
  BodySchema extends z.ZodType | undefined = undefined,
  Deps = never,
  Path extends string = string,
  QuerySchema extends z.ZodObject | undefined = undefined,
  UnknownNames extends UnknownQueryParameters | undefined = undefined,
>(
  declaration: RouteDeclaration<Requirement, BodySchema, Deps, Path, QuerySchema, UnknownNames>,
): RouteDeclaration<Requirement, BodySchema, Deps, Path, QuerySchema, UnknownNames> {
  return declaration;
}

/** Whether the router parses the route's query string (it declares one, and refuses others). */
export function queryParsedByRouter(route: DeclaredRoute<never>): boolean {
  return route.query !== undefined && route.unknownQueryParameters !== 'ignored';
}

/** A group of routes in /openapi.json: its tag, and what the group is for. */
export interface RouteSection {
  readonly name: string;
  readonly description: string;
}

/** The routes of one /openapi.json section, each tagged with it. */
export function inSection<Route extends DeclaredRoute<never>>(
  section: RouteSection,
  routes: readonly Route[],
): Route[] {
  return routes.map((route) => Object.assign({}, route, { section })); // once, at startup
}

/**
 * Whether no cache may keep the route's answers (`Cache-Control: no-store`): it carries a secret
 * or a profile, or it answers a signed-in dashboard user (what an organization holds: its
 * product users, members' e-mails, usage and audit log must not stay in a shared browser's disk
 * cache after sign-out).
 */
export function answersNoStore(route: DeclaredRoute<never>): boolean {
  return (
    route.answerCarriesSecret === true ||
    route.caller.kind === 'session' ||
    route.caller.kind === 'org_member'
  );
}

/** Every error code a declared route can answer with, in catalogue order of appearance. */
export function routeErrorCodes(route: DeclaredRoute<never>): ErrorCode[] {
  return [
    ...new Set<ErrorCode>([
      ...callerErrors[route.caller.kind],
      ...(route.body ? (route.bodyEncoding === 'form' ? formBodyErrors : bodyErrors) : []),
      ...Object.values(route.bodyFieldErrors ?? {}),
      // The caller's credentials are fields of the body: a malformed body is refused first.
      ...(route.caller.kind === 'oauth_client' ? (['gw_invalid_request'] as const) : []),
      // Query and path parameters with NUL characters or lone surrogates (src/http/server.ts).
      ...(route.query || route.path.includes('{') ? (['gw_invalid_request'] as const) : []),
      ...Object.values(route.queryFieldErrors ?? {}),
      ...(route.idempotent === true ? idempotencyErrors : []),
      ...(route.errors ?? []),
    ]),
  ];
}
