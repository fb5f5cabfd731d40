// GET /openapi.json: the public schema, generated at boot from the route declarations.
import { sendJson } from '../http/respond.js';
import { declareRoute } from './framework/declaration.js';

export const openApiRoute = declareRoute({
  method: 'GET',
  path: '/openapi.json',
  summary: 'This document',
  caller: { kind: 'none' },
  responses: { 200: { description: 'the OpenAPI 3.1 document' } },
  errors: [],
  handler(_call, response, deps: { readonly openApiDocument: Record<string, unknown> }) {
    sendJson(response, 200, deps.openApiDocument);
  },
});
