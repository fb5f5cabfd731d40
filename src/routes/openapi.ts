// GET /openapi.json: the public schema, generated at boot from the route declarations.
import { declareRoute } from './framework/declaration.js';

export const openApiRoute = declareRoute({
  method: 'GET',
  path: '/openapi.json',
  summary: 'This document',
  caller: { kind: 'none' },
  responses: { 200: { description: 'the OpenAPI 3.1 document' } },
  handler(_call, deps: { readonly openApiDocument: Record<string, unknown> }) {
    return deps.openApiDocument;
  },
});
