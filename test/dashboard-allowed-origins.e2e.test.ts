// DASHBOARD_ALLOWED_ORIGINS as an operator writes it (upper case, a default port, a trailing
// slash) is read as the origin a browser sends (decision 354): a dashboard write from that
// origin passes the Origin check, and the refusal of another names the entry as normalised.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isolatedContext } from './support/context.js';
import { startGateway, type GatewayProcess } from './support/processes.js';

const { env } = isolatedContext('allowed-origins');
let gateway: GatewayProcess;

beforeAll(async () => {
  gateway = await startGateway({
    ...env,
    DASHBOARD_ALLOWED_ORIGINS: ' HTTPS://Partner.Example:443/ ,http://LOCALHOST:80/',
  });
});

afterAll(async () => {
  await gateway?.stop();
});

/** A sign-in (a dashboard write before any session) sent from `origin`. */
async function signInFrom(
  origin: string,
): Promise<{ status: number; error: { code: string; message: string } }> {
  const response = await fetch(`${gateway.url}/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin },
    body: JSON.stringify({ email: 'nobody@example.test', password: 'not the password' }),
  });
  const body = (await response.json()) as { error: { code: string; message: string } };
  return { status: response.status, error: body.error };
}

describe('DASHBOARD_ALLOWED_ORIGINS entries', () => {
  it('match the Origin a browser sends for them', async () => {
    // Past the Origin check, the sign-in itself is refused: no such account.
    for (const origin of ['https://partner.example', 'http://localhost']) {
      expect(await signInFrom(origin), origin).toMatchObject({
        status: 401,
        error: { code: 'gw_invalid_credentials' },
      });
    }
  });

  it('are named as normalised when another origin is refused', async () => {
    const refused = await signInFrom('https://partner.example.evil');
    expect(refused.status).toBe(403);
    expect(refused.error.code).toBe('gw_origin_not_allowed');
    expect(refused.error.message).toContain(', https://partner.example, http://localhost;');
  });
});
