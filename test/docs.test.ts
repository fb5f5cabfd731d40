// The error catalogue page lists every code with the status the gateway really answers.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { errorCatalogue } from '../src/errors.js';

describe('docs/errors.md', () => {
  const page = readFileSync(new URL('../docs/errors.md', import.meta.url), 'utf8');
  it.each(Object.entries(errorCatalogue))('lists %s with its status', (code, { status }) => {
    expect(page).toContain(`| ${status} | \`${code}\` |`);
  });
});

describe('/openapi.json', () => {
  it('lists the routes and, for each, the error codes with the statuses the gateway answers', async () => {
    const { buildOpenApiDocument } = await import('../src/openapi/document.js');
    const { routeDeclarations } = await import('../src/routes/index.js');
    const document = buildOpenApiDocument(routeDeclarations) as {
      paths: Record<string, Record<string, { responses: Record<string, { description: string }> }>>;
    };
    expect(Object.keys(document.paths)).toEqual(
      expect.arrayContaining([
        '/v1/chat/completions',
        '/v1/messages',
        '/v1/messages/count_tokens',
        '/v1/models',
        '/inference-keys/usage',
        '/product-users/by-external-id',
        '/product-users/by-external-id/credit-summary',
        '/product-users/by-external-id/credit-grants',
      ]),
    );
    const chat = document.paths['/v1/chat/completions']!.post!.responses;
    for (const code of [
      'gw_malformed_or_missing_key',
      'gw_unknown_key',
      'gw_key_inactive',
      'gw_model_not_allowed',
      'gw_unsupported_model',
    ] as const) {
      expect(chat[String(errorCatalogue[code].status)]!.description).toContain(code);
    }
  });
});
