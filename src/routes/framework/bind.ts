// Turns route declarations into the HTTP adapter's routes: the caller is authenticated as
// soon as the headers are read (the adapter stops reading the body of a refused request),
// the JSON body is validated against the declared schema, and only then the handler runs.
import type { z } from 'zod';
import { gwError, isGwError, type ErrorFlavor } from '../../errors.js';
import { sendError } from '../../http/respond.js';
import type { HttpResponse, RequestHead, Route } from '../../http/types.js';
import { contentTypeError, parseJsonBody } from '../../inference/parse-body.js';
import { textProblem } from '../../text.js';
import type { Authenticators, CallerRequirement, DeclaredRoute } from './declaration.js';

const STORED_BODY_CALLERS: ReadonlySet<CallerRequirement['kind']> = new Set([
  'none',
  'session',
  'org_member',
]);

export function bindRoutes<Deps>(
  routes: readonly DeclaredRoute<Deps>[],
  deps: Deps,
  authenticators: Authenticators,
): Route[] {
  return routes.map((route) => bindRoute(route, deps, authenticators));
}

function bindRoute<Deps>(
  route: DeclaredRoute<Deps>,
  deps: Deps,
  authenticators: Authenticators,
): Route {
  const flavorOf = (headers: Readonly<Record<string, string>>): ErrorFlavor =>
    typeof route.errorFlavor === 'function'
      ? route.errorFlavor(headers)
      : (route.errorFlavor ?? 'default');
  return {
    method: route.method,
    path: route.path,
    errorFlavor: flavorOf,
    authenticate: (head) => authenticate(authenticators, route.caller, head),
    handler: (request, response, caller) => {
      annotateCallerOrg(response, caller);
      let body: unknown;
      if (route.body) {
        const parsed =
          contentTypeError(request.headers) ??
          parseJsonBody(
            route.bodyOptional && request.body.length === 0 ? Buffer.from('{}') : request.body,
            route.body as z.ZodType,
          );
        if (isGwError(parsed)) return sendError(response, parsed, flavorOf(request.headers));
        // Dashboard bodies are stored: text Postgres cannot store is refused here, once for
        // every such route. (Inference bodies go to the vendor, and the service-key routes
        // answer their spec's own codes: both check their stored fields where they read them.)
        const unstorable = STORED_BODY_CALLERS.has(route.caller.kind)
          ? unstorableText(parsed)
          : undefined;
        if (unstorable) {
          return sendError(
            response,
            gwError('gw_invalid_request', `${unstorable.path}: ${unstorable.problem}`),
            flavorOf(request.headers),
          );
        }
        body = parsed;
      }
      // The caller and body match the declaration: the adapter ran its authenticator and
      // the schema above validated the body.
      return route.handler(
        { request, caller: caller as never, body: body as never },
        response,
        deps,
      );
    },
  };
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
    case 'api_key':
      return authenticators.apiKey(head.headers);
    case 'service_key':
      return authenticators.serviceKey(head.headers, requirement.scope);
    case 'session':
      return authenticators.session(head);
    case 'org_member':
      return authenticators.orgMember(head, requirement.role, requirement.org);
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
  if (typeof value !== 'object' || value === null) return undefined;
  for (const [key, item] of Object.entries(value)) {
    const keyProblem = textProblem(key);
    if (keyProblem) return { path: `${path} key`, problem: keyProblem };
    const found = unstorableText(item, path === 'body' ? key : `${path}.${key}`);
    if (found) return found;
  }
  return undefined;
}
