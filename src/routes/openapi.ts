// GET /openapi.json: the public schema, built once at boot.
import { sendJson } from '../http/respond.js';
import type { Route } from '../http/types.js';
import { buildOpenApiDocument } from '../openapi/document.js';

export function openApiRoute(): Route {
  const document = buildOpenApiDocument();
  return {
    method: 'GET',
    path: '/openapi.json',
    handler: (_request, response) => sendJson(response, 200, document),
  };
}
