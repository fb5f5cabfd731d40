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
