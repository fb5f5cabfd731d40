// The public machine-readable schema (GET /openapi.json), generated from the route
// declarations: their caller kinds, request and response schemas, and error codes (with the
// statuses from the error catalogue).
import { OpenAPIRegistry, OpenApiGeneratorV31 } from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';
import { errorCatalogue, type ErrorCode } from '../errors.js';
import {
  routeErrorCodes,
  type CallerRequirement,
  type DeclaredRoute,
  type RouteSection,
} from '../routes/framework/declaration.js';

const codes = Object.keys(errorCatalogue) as [ErrorCode, ...ErrorCode[]];
const errorSchema = z.object({
  error: z.object({ code: z.enum(codes), message: z.string() }).loose(),
});
/** RFC 6749 section 5.2, as the OAuth token and revocation endpoints answer errors. */
const oauthErrorSchema = z.object({
  error: z
    .string()
    .describe('invalid_request, invalid_client, invalid_grant, unsupported_grant_type, …'),
  error_description: z.string(),
  gw_code: z.enum(codes),
});

const securitySchemes = {
  apiKey: { type: 'http', scheme: 'bearer', description: 'gw_… API key' },
  serviceKey: { type: 'http', scheme: 'bearer', description: 'gw_svc_… service key' },
  oauthClientBasic: {
    type: 'http',
    scheme: 'basic',
    description:
      "an OAuth client's client_id:client_secret (confidential clients; or the client_id and client_secret form fields, client_id alone for public clients)",
  },
  dashboardSession: {
    type: 'apiKey',
    in: 'cookie',
    name: '__Host-gw_session',
    description:
      'dashboard session cookie from POST /auth/login; writes also need X-CSRF-Token (GET /auth/csrf) and an allowed Origin',
  },
} as const;

function security(caller: CallerRequirement): Array<Record<string, string[]>> | undefined {
  switch (caller.kind) {
    case 'none':
    case 'dashboard_visitor':
      return undefined;
    case 'api_key':
      return [{ apiKey: [] }];
    case 'service_key':
      return [{ serviceKey: [caller.scope] }];
    case 'session':
      return [{ dashboardSession: [] }];
    case 'optional_session':
      return [{}, { dashboardSession: [] }];
    case 'oauth_client':
      return [{ oauthClientBasic: [] }, {}];
    case 'org_member':
      return [{ dashboardSession: [caller.role] }];
  }
}

const json = (schema: z.ZodType) => ({ content: { 'application/json': { schema } } });
const form = (schema: z.ZodType) => ({
  content: { 'application/x-www-form-urlencoded': { schema } },
});

/** Error responses of a route: each status with the codes the gateway answers with it. */
function errorResponses(codesOfRoute: readonly ErrorCode[], oauthShape: boolean) {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of codesOfRoute) {
    const status = errorCatalogue[code].status;
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  return Object.fromEntries(
    [...byStatus.entries()].map(([status, list]) => [
      String(status),
      {
        description: list.map((code) => `\`${code}\`: ${errorCatalogue[code].summary}`).join('; '),
        ...json(oauthShape ? oauthErrorSchema : errorSchema),
      },
    ]),
  );
}

/** The `{name}` segments of a route path, as the schema of its path parameters. */
function pathParams(path: string): z.ZodObject | undefined {
  const names = [...path.matchAll(/\{(\w+)\}/g)].map((found) => found[1]!);
  if (names.length === 0) return undefined;
  return z.object(Object.fromEntries(names.map((name) => [name, z.string()])));
}

export function buildOpenApiDocument(
  routes: readonly DeclaredRoute<never>[],
): Record<string, unknown> {
  const registry = new OpenAPIRegistry();
  const sections = new Map<string, RouteSection>();
  for (const [name, scheme] of Object.entries(securitySchemes)) {
    registry.registerComponent('securitySchemes', name, scheme);
  }
  for (const route of routes) {
    if (route.undocumented) continue;
    const successes = Object.fromEntries(
      Object.entries(route.responses).map(([status, doc]) => [
        status,
        { description: doc.description, ...(doc.schema && json(doc.schema)) },
      ]),
    );
    const routeSecurity = security(route.caller);
    if (route.section) sections.set(route.section.name, route.section);
    registry.registerPath({
      method: route.method.toLowerCase() as 'get' | 'post' | 'put' | 'delete' | 'patch',
      path: route.path,
      summary: route.summary,
      ...(route.section && { tags: [route.section.name] }),
      ...(routeSecurity && { security: routeSecurity }),
      request: {
        ...(pathParams(route.path) && { params: pathParams(route.path) }),
        ...(route.body && {
          body: {
            ...(route.bodyEncoding === 'form' ? form(route.body) : json(route.body)),
            ...(route.bodyOptional && { required: false }),
          },
        }),
        ...(route.query && { query: route.query }),
      },
      responses: {
        ...successes,
        ...errorResponses(routeErrorCodes(route), route.errorFlavor === 'oauth'),
      },
    });
  }
  const generator = new OpenApiGeneratorV31(registry.definitions);
  return generator.generateDocument({
    openapi: '3.1.0',
    info: {
      title: 'gw inference gateway',
      version: '0.1.0',
      description: 'Inference routes under /v1; product-user management routes unprefixed.',
    },
    tags: [...sections.values()].map(({ name, description }) => ({ name, description })),
  }) as unknown as Record<string, unknown>;
}
