// Turns route declarations into the HTTP adapter's routes: the caller is authenticated as
// soon as the headers are read (the adapter stops reading the body of a refused request),
// the JSON body is validated against the declared schema, and only then the handler runs.
import type { z } from 'zod';
import { csrfTokenMatches } from '../../accounts/sessions.js';
import { gwError, isGwError, type ErrorFlavor, type GwError } from '../../errors.js';
import { isWriteMethod } from '../../http/methods.js';
import { noStoreHeaders, sendError, sendJson } from '../../http/respond.js';
import type { HttpResponse, RequestHead, Route } from '../../http/types.js';
import { contentTypeError, parseJsonBody } from '../../inference/parse-body.js';
import { textProblem } from '../../text.js';
import {
  answersNoStore,
  JsonAnswer,
  queryParsedByRouter,
  type Authenticators,
  type CallerRequirement,
  type DeclaredRoute,
  type RouteCall,
  type RouteResult,
} from './declaration.js';
import { parseFormBody } from './form-body.js';
import { parseQuery } from './query.js';
import { runIdempotently } from './idempotent.js';
import type { IdempotencyKeys } from '../../idempotency/store.js';
import { isJsonContainer } from '../../json-shapes.js';

const STORED_BODY_CALLERS: ReadonlySet<CallerRequirement['kind']> = new Set([
  'none',
  'dashboard_visitor',
  'session',
  'optional_session',
  'org_member',
  'oauth_client',
]);

/** The form field that carries the CSRF token of a route declared with `csrf: 'form'`. */
export const CSRF_FORM_FIELD = 'csrf_token';

/**
 * `idempotencyKeys`: where the Idempotency-Keys of routes declared `idempotent: true` are kept
 * (required when one is bound).
 */
export function bindRoutes<Deps>(
  routes: readonly DeclaredRoute<Deps>[],
  deps: Deps,
  authenticators: Authenticators,
  idempotencyKeys?: IdempotencyKeys,
): Route[] {
  return routes.map((route) => bindRoute(route, deps, authenticators, idempotencyKeys));
}

function bindRoute<Deps>(
  route: DeclaredRoute<Deps>,
  deps: Deps,
  authenticators: Authenticators,
  idempotencyKeys: IdempotencyKeys | undefined,
): Route {
  checkDeclaration(route);
  if (route.idempotent === true && !idempotencyKeys) {
    throw new Error(`${route.method} ${route.path}: an idempotent route needs idempotency keys`);
  }
  const flavorOf = (headers: Readonly<Record<string, string>>): ErrorFlavor =>
    typeof route.errorFlavor === 'function'
      ? route.errorFlavor(headers)
      : (route.errorFlavor ?? 'default');
  // A handler's plain body answers with the route's first declared status.
  const successStatus = Number(Object.keys(route.responses)[0] ?? 200);
  const extraHeaders = answersNoStore(route as DeclaredRoute<never>) ? noStoreHeaders : undefined;
  const parsesQuery = queryParsedByRouter(route as DeclaredRoute<never>);
  return {
    method: route.method,
    path: route.path,
    errorFlavor: flavorOf,
    fallback: route.fallback === true,
    readsClientAddress: route.readsClientAddress === true,
    // The adapter's refusals before the handler (its body too large, a header sent twice, …)
    // reach the route's onRefused as the router's own do below.
    onRefused: route.onRefused
      ? (head: RequestHead, refusal: GwError, rawBody: Buffer | null) =>
          route.onRefused!({ request: head, rawBody, refusal }, deps)
      : undefined,
    authenticate: (head) => authenticate(authenticators, route.caller, head),
    handler: async (request, response, authenticated) => {
      const refuse = (error: GwError): void =>
        sendError(response, error, flavorOf(request.headers), extraHeaders);
      // The raw body outlives its release only for a route that must see a refused attempt.
      const rawBody = route.onRefused ? request.body : undefined;
      const refuseAttempt = async (error: GwError): Promise<void> => {
        const instead =
          rawBody && route.onRefused
            ? await route.onRefused({ request, rawBody, refusal: error }, deps)
            : undefined;
        refuse(instead ?? error);
      };
      let caller = authenticated;
      // Even a request refused for its body or query names its caller's organization in the log.
      annotateCallerOrg(response, caller);
      let query: unknown;
      if (parsesQuery) {
        const parsed = parseQuery(request.query, route.query!, route.queryFieldErrors);
        if (isGwError(parsed)) return refuseAttempt(parsed);
        query = parsed;
      }
      let body: unknown;
      if (route.body) {
        const schema = route.body as z.ZodType;
        const parsed =
          route.bodyEncoding === 'form'
            ? parseFormBody(request.headers, request.body, schema)
            : (contentTypeError(request.headers) ??
              parseJsonBody(
                route.bodyOptional && request.body.length === 0 ? Buffer.from('{}') : request.body,
                schema,
                route.bodyFieldErrors,
                // gw's own APIs read a body one way only; inference bodies are read as the
                // vendors read them (decision 310)
                { strict: route.caller.kind !== 'api_key' },
              ));
        request.releaseBody(); // parsed: the raw bytes are not needed again
        if (isGwError(parsed)) return refuseAttempt(parsed);
        // Dashboard bodies are stored: text Postgres cannot store is refused here, once for
        // every such route, and so are forms (their values are looked up in Postgres).
        // (Inference bodies go to the vendor, and the service-key routes answer their spec's
        // own codes: both check their stored fields where they read them.)
        const unstorable =
          STORED_BODY_CALLERS.has(route.caller.kind) || route.bodyEncoding === 'form'
            ? unstorableText(parsed)
            : undefined;
        if (unstorable) {
          return refuseAttempt(
            gwError('gw_invalid_request', `${unstorable.path}: ${unstorable.problem}`),
          );
        }
        body = parsed;
      }
      // What the caller proves with the body: a form's CSRF token, an OAuth client's secret.
      // The token is a write's proof, by the rule the header's token follows (isWriteMethod).
      if (route.caller.kind === 'session' && route.caller.csrf === 'form') {
        const session = (caller as { session: { csrfToken: string } }).session;
        const presented = (body as Record<string, unknown>)[CSRF_FORM_FIELD];
        if (
          isWriteMethod(request.method) &&
          !csrfTokenMatches(
            typeof presented === 'string' ? presented : undefined,
            session.csrfToken,
          )
        ) {
          return refuse(
            gwError(
              'gw_csrf_token_invalid',
              `send the session's CSRF token (GET /auth/csrf) in the ${CSRF_FORM_FIELD} field`,
            ),
          );
        }
      }
      if (route.caller.kind === 'oauth_client') {
        const client = await authenticators.oauthClient(
          request.headers,
          body as Record<string, unknown>,
        );
        if (isGwError(client)) return refuseAttempt(client);
        caller = client;
        annotateCallerOrg(response, caller);
      }
      // The caller, body, query and params match the declaration: the adapter ran its
      // authenticator, the schemas above validated the body and query, and the path matched
      // every parameter.
      const pending = startHandler(
        route,
        deps,
        { request, params: request.params, caller, body, query, response },
        { idempotencyKeys, successStatus },
      );
      // Not awaited in this frame: a suspended frame keeps its locals, the parsed body among
      // them, and a stream's handler runs for minutes (bench/RESULTS.md, 2026-11-24).
      return pending.then(
        (result) => writeResult(response, refuse, successStatus, result, extraHeaders),
        (error: unknown) => {
          // A thrown GwError is an answer like a returned one; anything else is a bug (500).
          if (!isGwError(error) || response.headersSent) throw error;
          refuse(error);
        },
      );
    },
  };
}

/**
 * Runs the route's handler (once per Idempotency-Key for a route declared idempotent). Here, not
 * in bindRoute's handler: a closure there holding the call would keep its body for as long as
 * the handler runs.
 */
function startHandler<Deps>(
  route: DeclaredRoute<Deps>,
  deps: Deps,
  call: RouteCall<unknown, unknown>,
  options: {
    readonly idempotencyKeys: IdempotencyKeys | undefined;
    readonly successStatus: number;
  },
): Promise<RouteResult> {
  if (route.idempotent !== true) return invokeHandler(route, deps, call);
  const finishes = route.finishesCommitted;
  return runIdempotently(
    options.idempotencyKeys!,
    route as DeclaredRoute<never>,
    call.request,
    { caller: call.caller, body: call.body, successStatus: options.successStatus },
    () => invokeHandler(route, deps, call),
    finishes && {
      effectOf: (committed) => finishes.effectOf(committed),
      answer: (effectRef) => finishes.answer(effectRef, call as never, deps),
    },
  );
}

function invokeHandler<Deps>(
  route: DeclaredRoute<Deps>,
  deps: Deps,
  call: RouteCall<unknown, unknown>,
): Promise<RouteResult> {
  try {
    return Promise.resolve(route.handler(call as never, deps));
  } catch (error) {
    return Promise.reject(error as Error);
  }
}

/** Writes what a handler resolved to (see RouteResult). */
function writeResult(
  response: HttpResponse,
  refuse: (error: GwError) => void,
  successStatus: number,
  result: RouteResult,
  extraHeaders: Readonly<Record<string, string>> | undefined,
): void {
  if (result === undefined) return; // the handler wrote its answer itself
  if (isGwError(result)) return refuse(result);
  if (result instanceof JsonAnswer) {
    return sendJson(response, result.status, result.body, result.headers, extraHeaders);
  }
  sendJson(response, successStatus, result, undefined, extraHeaders);
}

/** Every authenticated caller kind that belongs to one organization names it in the request log. */
function annotateCallerOrg(response: HttpResponse, caller: unknown): void {
  const orgId = (caller as { orgId?: unknown } | null)?.orgId;
  if (typeof orgId === 'string') response.annotate({ orgId });
}

function authenticate(
  authenticators: Authenticators,
  requirement: CallerRequirement,
  head: RequestHead,
): Promise<unknown> {
  switch (requirement.kind) {
    case 'none':
      return Promise.resolve(null);
    case 'dashboard_visitor':
      return authenticators.dashboardVisitor(head);
    case 'api_key':
      return authenticators.apiKey(head.headers);
    case 'service_key':
      return authenticators.serviceKey(head.headers, requirement.scope);
    case 'session':
      return authenticators.session(head, {
        csrfInBody: requirement.csrf === 'form',
        unverifiedAllowed: requirement.unverified === 'allowed',
      });
    case 'optional_session':
      // No session (or an expired one) is a caller too: the route sends them to sign in.
      return authenticators
        .session(head)
        .then((caller) =>
          isGwError(caller) && caller.code === 'gw_session_required' ? null : caller,
        );
    case 'oauth_client':
      // Authenticated once the body is read (bindRoute's handler): credentials may be in it.
      return Promise.resolve(null);
    case 'org_member':
      return authenticators.orgMember(head, requirement.role, requirement.org);
  }
}

/** Declarations the router cannot serve as written are refused when they are bound. */
function checkDeclaration(route: DeclaredRoute<unknown>): void {
  const where = `${route.method} ${route.path}`;
  const formBody = route.body !== undefined && route.bodyEncoding === 'form';
  if (route.caller.kind === 'session' && route.caller.csrf === 'form' && !formBody) {
    throw new Error(`${where}: a CSRF token in the form needs a form body`);
  }
  if (route.caller.kind === 'oauth_client' && !formBody) {
    throw new Error(`${where}: an OAuth client authenticates with a form body`);
  }
  if (route.caller.kind === 'optional_session' && route.method !== 'GET') {
    throw new Error(`${where}: an optional session is for GET routes only`);
  }
  if (route.queryFieldErrors && !queryParsedByRouter(route as DeclaredRoute<never>)) {
    throw new Error(`${where}: query field errors need a query the router parses`);
  }
  if (
    route.idempotent === true &&
    (route.method !== 'POST' || !['org_member', 'service_key'].includes(route.caller.kind))
  ) {
    throw new Error(`${where}: Idempotency-Keys are for POST routes of one organization's callers`);
  }
  if (route.finishesCommitted && route.idempotent !== true) {
    throw new Error(`${where}: only a route the router runs idempotently finishes a committed one`);
  }
}

/** The first string (or object key) in a parsed body that Postgres cannot store, if any. */
function unstorableText(
  value: unknown,
  path = 'body',
): { path: string; problem: string } | undefined {
  if (typeof value === 'string') {
    const problem = textProblem(value);
    return problem ? { path, problem } : undefined;
  }
  if (!isJsonContainer(value)) return undefined;
  for (const [key, item] of Object.entries(value)) {
    const keyProblem = textProblem(key);
    if (keyProblem) return { path: `${path} key`, problem: keyProblem };
    const found = unstorableText(item, path === 'body' ? key : `${path}.${key}`);
    if (found) return found;
  }
  return undefined;
}
