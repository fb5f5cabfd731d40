// Turns route declarations into the HTTP adapter's routes: the caller is authenticated as
// soon as the headers are read (the adapter stops reading the body of a refused request),
// the JSON body is validated against the declared schema, and only then the handler runs.
import type { z } from 'zod';
import { isGwError, type ErrorFlavor } from '../errors.js';
import { sendError } from '../http/respond.js';
import type { RequestHead, Route } from '../http/types.js';
import { parseJsonBody } from '../inference/parse-body.js';
import type { Authenticators, CallerRequirement, DeclaredRoute } from './declaration.js';

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
      let body: unknown;
      if (route.body) {
        const parsed = parseJsonBody(request.body, route.body as z.ZodType);
        if (isGwError(parsed)) return sendError(response, parsed, flavorOf(request.headers));
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
