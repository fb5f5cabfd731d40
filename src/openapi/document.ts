// The public machine-readable schema (GET /openapi.json), generated from the route
// declarations: their caller kinds, request and response schemas, and error codes (with the
// statuses from the error catalogue). Error bodies are components (`Error`, `AllowanceError`,
// `OAuthError`); each error response narrows `code` to the codes its route answers with that
// status.
import { OpenAPIRegistry, OpenApiGeneratorV31 } from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';
import { ALLOWANCE_SHAPED_CODES, errorCatalogue, type ErrorCode } from '../errors.js';
import { IDEMPOTENCY_KEY_MAX_CHARS } from '../idempotency/key.js';
import {
  answersNoStore,
  routeErrorCodes,
  type CallerRequirement,
  type DeclaredRoute,
  type ResponseDoc,
  type RouteSection,
} from '../routes/framework/declaration.js';

type SchemaObject = Record<string, unknown>;
const ref = (name: string): SchemaObject => ({ $ref: `#/components/schemas/${name}` });
const decimal = { type: 'string', description: 'decimal amount, 12 fractional digits' } as const;

/** The error bodies, shared by every error response (docs/errors.md). */
const errorComponents: Record<string, SchemaObject> = {
  Error: {
    type: 'object',
    description:
      'The standard error shape. The messages protocol (/v1/messages, and the model routes asked in its format) adds `type: "error"` and `error.type`.',
    required: ['error'],
    properties: {
      type: { type: 'string', const: 'error' },
      error: {
        type: 'object',
        required: ['code', 'message'],
        properties: {
          code: { type: 'string', description: 'a code of the error catalogue (docs/errors.md)' },
          message: { type: 'string' },
          type: { type: 'string' },
        },
      },
    },
  },
  AllowanceError: {
    type: 'object',
    description:
      "The allowance rejection (SPEC.md): `error.code` is the HTTP status as text, the gateway's code and the amounts are under `error.provider_specific_fields.error`.",
    required: ['error'],
    properties: {
      type: { type: 'string', const: 'error' },
      error: {
        type: 'object',
        required: ['code', 'message', 'provider_specific_fields'],
        properties: {
          code: { type: 'string', const: '403' },
          message: { type: 'string' },
          type: { type: 'string' },
          provider_specific_fields: {
            type: 'object',
            required: ['error'],
            properties: {
              error: {
                type: 'object',
                required: ['code', 'message', 'params'],
                properties: {
                  code: { type: 'string', enum: [...ALLOWANCE_SHAPED_CODES] },
                  message: { type: 'string' },
                  params: {
                    type: 'object',
                    required: [
                      'cap_amount',
                      'remaining_base_allowance',
                      'promotional_credit_balance',
                      'available_allowance',
                      'estimated_request_cost',
                      'shortfall',
                    ],
                    properties: {
                      cap_amount: decimal,
                      remaining_base_allowance: decimal,
                      promotional_credit_balance: decimal,
                      available_allowance: decimal,
                      estimated_request_cost: decimal,
                      shortfall: decimal,
                    },
                  },
                },
              },
            },
          },
        },
      },
    },
  },
  OAuthError: {
    type: 'object',
    description: 'RFC 6749 section 5.2, as the OAuth token and revocation endpoints answer errors.',
    required: ['error', 'error_description', 'gw_code'],
    properties: {
      error: {
        type: 'string',
        description: 'invalid_request, invalid_client, invalid_grant, unsupported_grant_type, …',
      },
      error_description: { type: 'string' },
      gw_code: { type: 'string', description: 'a code of the error catalogue (docs/errors.md)' },
    },
  },
};

/**
 * One schema per code of the catalogue, named by it: its shape with its code (the allowance
 * codes in their own shape), described by its summary.
 */
function codeComponents(): Record<string, SchemaObject> {
  return Object.fromEntries(
    Object.entries(errorCatalogue).map(([code, { status, summary }]) => {
      const own = ALLOWANCE_SHAPED_CODES.includes(code as ErrorCode)
        ? [
            ref('AllowanceError'),
            {
              properties: {
                error: {
                  properties: {
                    provider_specific_fields: {
                      properties: { error: { properties: { code: { const: code } } } },
                    },
                  },
                },
              },
            },
          ]
        : [ref('Error'), { properties: { error: { properties: { code: { const: code } } } } }];
      return [code, { description: `${status}: ${summary}`, allOf: own }];
    }),
  );
}

/**
 * The body of an error response: one of the route's codes of that status (each code's schema
 * fixes its code, so a body matches exactly one).
 */
function errorBodySchema(codes: readonly ErrorCode[], oauthShape: boolean): SchemaObject {
  if (oauthShape)
    return { allOf: [ref('OAuthError'), { properties: { gw_code: { enum: codes } } }] };
  return codes.length === 1 ? ref(codes[0]!) : { oneOf: codes.map((code) => ref(code)) };
}

const securitySchemes = {
  apiKey: { type: 'http', scheme: 'bearer', description: 'gw_… API key' },
  apiKeyHeader: {
    type: 'apiKey',
    in: 'header',
    name: 'x-api-key',
    description: 'gw_… API key in the messages protocol header (instead of Authorization)',
  },
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
      return [{ apiKey: [] }, { apiKeyHeader: [] }];
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

const json = (schema: z.ZodType | SchemaObject) => ({
  content: { 'application/json': { schema } },
});

/**
 * The content of a success: its JSON body's schema, and for a status that can be an event
 * stream, `text/event-stream` as a string whose description says what the events are.
 */
function successContent(doc: ResponseDoc) {
  if (!doc.schema && doc.eventStream === undefined) return undefined;
  return {
    content: {
      ...(doc.schema && { 'application/json': { schema: doc.schema } }),
      ...(doc.eventStream !== undefined && {
        'text/event-stream': { schema: { type: 'string' as const, description: doc.eventStream } },
      }),
    },
  };
}

const form = (schema: z.ZodType) => ({
  content: { 'application/x-www-form-urlencoded': { schema } },
});

/** The header every answer of a route no cache may keep has (answersNoStore). */
const noStoreHeaderDoc = {
  'Cache-Control': {
    description:
      'the answer carries a secret or a profile, or answers a signed-in user: no cache may store it',
    schema: { type: 'string' as const, enum: ['no-store'] },
  },
};

/** The Idempotency-Key request header of a route declared idempotent (decision 372). */
const idempotencyKeyHeaders = z.object({
  'Idempotency-Key': z
    .string()
    .min(1)
    .max(IDEMPOTENCY_KEY_MAX_CHARS)
    .regex(/^[\x20-\x7e]+$/)
    .optional()
    .describe(
      'a key of your choosing (printable ASCII, 1 to 255 characters), new for each new request: the same request sent again with it is not done again',
    ),
});

/** The header of an answer the router replays for an Idempotency-Key (decision 372). */
const replayedHeaderDoc = {
  'Idempotent-Replayed': {
    description:
      'present (`true`) when this is the answer to an earlier request with the same Idempotency-Key, replayed',
    schema: { type: 'string' as const, enum: ['true'] },
  },
};

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
        ...json(errorBodySchema(list, oauthShape)),
      },
    ]),
  );
}

/**
 * A route path as OpenAPI writes it: a catch-all `{name*}` (the rest of the path, `/` included)
 * is the parameter `{name}`, whose value a client sends percent-encoded (the router takes both).
 */
export function documentedPath(path: string): string {
  return path.replace(/\{(\w+)\*\}/g, '{$1}');
}

/**
 * The operationId of a route, for client generators: its method and its path, each segment in
 * PascalCase and a parameter as `By<Name>` (`GET /dashboard/api/orgs/{org_id}/apps` is
 * `getDashboardApiOrgsByOrgIdApps`). Derived rather than declared, so no route can lack one;
 * two routes may not derive the same (test/route-declarations.test.ts).
 */
export function operationId(method: string, path: string): string {
  const pascal = (text: string): string =>
    text
      .split(/[^A-Za-z0-9]+/)
      .filter((word) => word !== '')
      .map((word) => word[0]!.toUpperCase() + word.slice(1))
      .join('');
  const segments = path
    .split('/')
    .filter((segment) => segment !== '')
    .map((segment) => {
      const parameter = /^\{(\w+)\*?\}$/.exec(segment);
      return parameter ? `By${pascal(parameter[1]!)}` : pascal(segment);
    });
  return method.toLowerCase() + segments.join('');
}

/** The `{name}` and `{name*}` segments of a route path, as the schema of its path parameters. */
function pathParams(path: string): z.ZodObject | undefined {
  const found = [...path.matchAll(/\{(\w+)(\*?)\}/g)];
  if (found.length === 0) return undefined;
  return z.object(
    Object.fromEntries(
      found.map(([, name, rest]) => [
        name!,
        rest === '*'
          ? z.string().describe('the rest of the path; it may hold a `/` (sent as %2F or as is)')
          : z.string(),
      ]),
    ),
  );
}

/**
 * The description of a route that ignores query parameters it does not declare; a route that
 * declares its query refuses any other name (400 gw_invalid_request).
 */
export const UNKNOWN_QUERY_PARAMETERS_IGNORED =
  'Query parameters this operation does not list are ignored.';

export function buildOpenApiDocument(
  routes: readonly DeclaredRoute<never>[],
): Record<string, unknown> {
  const registry = new OpenAPIRegistry();
  const sections = new Map<string, RouteSection>();
  for (const [name, scheme] of Object.entries(securitySchemes)) {
    registry.registerComponent('securitySchemes', name, scheme);
  }
  for (const [name, schema] of Object.entries({ ...errorComponents, ...codeComponents() })) {
    registry.registerComponent('schemas', name, schema);
  }
  for (const route of routes) {
    if (route.undocumented) continue;
    const successes = Object.fromEntries(
      Object.entries(route.responses).map(([status, doc]) => [
        status,
        {
          description: doc.description,
          ...successContent(doc),
          ...((answersNoStore(route) || route.idempotent === true) && {
            headers: {
              ...(answersNoStore(route) && noStoreHeaderDoc),
              ...(route.idempotent === true && replayedHeaderDoc),
            },
          }),
        },
      ]),
    );
    const routeSecurity = security(route.caller);
    if (route.section) sections.set(route.section.name, route.section);
    registry.registerPath({
      method: route.method.toLowerCase() as 'get' | 'post' | 'put' | 'delete' | 'patch',
      path: documentedPath(route.path),
      operationId: operationId(route.method, route.path),
      summary: route.summary,
      ...(route.unknownQueryParameters === 'ignored' && {
        description: UNKNOWN_QUERY_PARAMETERS_IGNORED,
      }),
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
        ...((route.headers || route.idempotent) && {
          headers: z.object({
            ...route.headers?.shape,
            ...(route.idempotent && idempotencyKeyHeaders.shape),
          }),
        }),
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
