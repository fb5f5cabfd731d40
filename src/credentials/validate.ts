// Checks a provider secret with its vendor before it is stored: one cheap authenticated call
// (GET /v1/models). Nothing about the secret is logged or returned.
import { request } from 'undici';
import type { Vendor } from '../catalog/models.js';
import { findProvider } from '../providers/registry.js';

export type ValidationResult = 'valid' | 'invalid' | 'unreachable';

const VALIDATION_TIMEOUT_MS = 10_000;

export async function validateWithVendor(
  provider: Vendor,
  secret: string,
  baseUrl: string,
): Promise<ValidationResult> {
  const registered = findProvider(provider);
  if (!registered) return 'unreachable';
  const base = new URL(baseUrl);
  const headers = registered.validationHeaders(secret);
  try {
    const response = await request(`${base.origin}${base.pathname.replace(/\/+$/, '')}/v1/models`, {
      method: 'GET',
      headers,
      headersTimeout: VALIDATION_TIMEOUT_MS,
      bodyTimeout: VALIDATION_TIMEOUT_MS,
    });
    await response.body.dump();
    if (response.statusCode === 401 || response.statusCode === 403) return 'invalid';
    return response.statusCode < 400 || response.statusCode === 429 ? 'valid' : 'unreachable';
  } catch {
    return 'unreachable';
  }
}
