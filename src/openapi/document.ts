// The public machine-readable schema (GET /openapi.json), generated from the same zod schemas
// that validate requests, and the error catalogue. Dashboard routes are not part of it.
import { OpenAPIRegistry, OpenApiGeneratorV31 } from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';
import { errorCatalogue, type ErrorCode } from '../errors.js';
import { chatCompletionRequestSchema } from '../inference/chat-request.js';
import { countTokensRequestSchema, messagesRequestSchema } from '../inference/messages-request.js';
import { creditGrantSchema, upsertProductUserSchema } from '../routes/product-users.js';

const codes = Object.keys(errorCatalogue) as [ErrorCode, ...ErrorCode[]];
const errorSchema = z.object({
  error: z.object({ code: z.enum(codes), message: z.string() }).loose(),
});
const decimal = z
  .string()
  .regex(/^-?\d+\.\d{12}$/)
  .describe('decimal with 12 fractional digits');
const usageTotals = z.object({
  sell_cost: decimal,
  input_tokens: z.number().int(),
  output_tokens: z.number().int(),
  total_tokens: z.number().int(),
  request_count: z.number().int(),
});
const creditsSchema = z.object({
  currency: z.string(),
  available_credits: decimal,
  active_grant_count: z.number().int(),
  expiring_soon_amount: decimal,
  spent_this_month: decimal,
  spent_total: decimal,
  last_grant_at: z.string().nullable(),
  last_used_at: z.string().nullable(),
});
const productUserSchema = z
  .object({
    product_end_user_id: z.string(),
    org_id: z.string(),
    app_id: z.string(),
    external_user_id: z.string(),
    display_name: z.string(),
    email_hash: z.string(),
    status: z.string(),
    metadata: z.record(z.string(), z.unknown()),
    allowance_starts_at: z.string().nullable(),
    last_app_connection_id: z.string(),
    credits: creditsSchema,
    usage: z.object({ this_month: usageTotals, total: usageTotals }),
  })
  .loose();

/** Error responses of a route: each status with the codes the gateway answers with it. */
function errorResponses(codesOfRoute: readonly ErrorCode[]) {
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
        content: { 'application/json': { schema: errorSchema } },
      },
    ]),
  );
}

const API_KEY_ERRORS: ErrorCode[] = [
  'gw_malformed_or_missing_key',
  'gw_unknown_key',
  'gw_key_inactive',
];
const INFERENCE_ERRORS: ErrorCode[] = [
  ...API_KEY_ERRORS,
  'gw_invalid_json',
  'gw_invalid_request',
  'gw_body_too_large',
  'gw_model_not_allowed',
  'gw_unsupported_model',
  'gw_product_user_credits_required',
  'gw_product_user_blocked',
  'gw_cap_exceeded',
  'gw_product_user_allowance_insufficient',
  'gw_reservation_insufficient_balance',
  'gw_provider_credentials_unavailable',
  'gw_upstream_rate_limited',
  'gw_upstream_error',
  'gw_upstream_timeout',
  'gw_unavailable',
];
const SERVICE_KEY_ERRORS: ErrorCode[] = [
  'gw_malformed_or_missing_service_key',
  'gw_unknown_service_key',
  'gw_service_key_inactive',
  'gw_service_key_scope_required',
  'gw_invalid_app_id',
  'gw_invalid_external_user_id',
];
const byExternalIdQuery = z.object({ app_id: z.string(), external_user_id: z.string() });

export function buildOpenApiDocument(): Record<string, unknown> {
  const registry = new OpenAPIRegistry();
  registry.registerComponent('securitySchemes', 'apiKey', {
    type: 'http',
    scheme: 'bearer',
    description: 'gw_… API key',
  });
  registry.registerComponent('securitySchemes', 'serviceKey', {
    type: 'http',
    scheme: 'bearer',
    description: 'gw_svc_… service key',
  });
  const json = (schema: z.ZodType) => ({ content: { 'application/json': { schema } } });
  const apiKey = [{ apiKey: [] }];
  const serviceKey = [{ serviceKey: [] }];

  registry.registerPath({
    method: 'post',
    path: '/v1/chat/completions',
    summary: 'Chat completion (JSON, or SSE with stream: true) for any routable model',
    security: apiKey,
    request: { body: json(chatCompletionRequestSchema) },
    responses: {
      200: { description: 'chat.completion, or an SSE stream ending in data: [DONE]' },
      ...errorResponses(INFERENCE_ERRORS),
    },
  });
  registry.registerPath({
    method: 'post',
    path: '/v1/messages',
    summary:
      'Native messages protocol for vendor_a models (x-api-key or Bearer, vendor-version header)',
    security: apiKey,
    request: { body: json(messagesRequestSchema) },
    responses: {
      200: { description: 'message, or its SSE event stream' },
      ...errorResponses(INFERENCE_ERRORS),
    },
  });
  registry.registerPath({
    method: 'post',
    path: '/v1/messages/count_tokens',
    security: apiKey,
    request: { body: json(countTokensRequestSchema) },
    responses: {
      200: {
        description: 'input token count',
        ...json(z.object({ input_tokens: z.number().int() })),
      },
      ...errorResponses([
        ...API_KEY_ERRORS,
        'gw_invalid_request',
        'gw_model_not_allowed',
        'gw_unsupported_model',
      ]),
    },
  });
  registry.registerPath({
    method: 'get',
    path: '/v1/models',
    summary: 'Models the key may use (messages-protocol format with a vendor-version header)',
    security: apiKey,
    responses: { 200: { description: 'model list' }, ...errorResponses(API_KEY_ERRORS) },
  });
  registry.registerPath({
    method: 'get',
    path: '/inference-keys/usage',
    security: apiKey,
    responses: {
      200: {
        description: 'the key spend',
        ...json(
          z.object({
            key_id: z.string(),
            currency: z.string(),
            this_month: usageTotals,
            total: usageTotals,
          }),
        ),
      },
      ...errorResponses(API_KEY_ERRORS),
    },
  });
  registry.registerPath({
    method: 'get',
    path: '/product-users/by-external-id',
    security: serviceKey,
    request: { query: byExternalIdQuery },
    responses: {
      200: { description: 'the product user', ...json(productUserSchema) },
      ...errorResponses([...SERVICE_KEY_ERRORS, 'gw_product_user_not_found']),
    },
  });
  registry.registerPath({
    method: 'put',
    path: '/product-users/by-external-id',
    security: serviceKey,
    request: { body: json(upsertProductUserSchema) },
    responses: {
      200: { description: 'updated', ...json(productUserSchema) },
      201: { description: 'created', ...json(productUserSchema) },
      ...errorResponses([...SERVICE_KEY_ERRORS, 'gw_invalid_request']),
    },
  });
  registry.registerPath({
    method: 'get',
    path: '/product-users/by-external-id/credit-summary',
    security: serviceKey,
    request: { query: byExternalIdQuery.extend({ currency: z.string().optional() }) },
    responses: {
      200: { description: 'credits', ...json(creditsSchema) },
      ...errorResponses([...SERVICE_KEY_ERRORS, 'gw_product_user_not_found']),
    },
  });
  registry.registerPath({
    method: 'post',
    path: '/product-users/by-external-id/credit-grants',
    security: serviceKey,
    request: { body: json(creditGrantSchema) },
    responses: {
      200: { description: 'an Idempotency-Key replay: the first grant' },
      201: { description: 'granted' },
      ...errorResponses([...SERVICE_KEY_ERRORS, 'gw_invalid_request', 'gw_product_user_not_found']),
    },
  });
  for (const path of ['/healthz', '/readyz']) {
    registry.registerPath({
      method: 'get',
      path,
      responses: { 200: { description: 'ok' }, 503: { description: 'not ready' } },
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
  }) as unknown as Record<string, unknown>;
}
