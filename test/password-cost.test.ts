// The cost of password hashes (PASSWORD_SCRYPT_N, decision 573): a hash is made at the
// configured cost and stored with it, and checked at its own, so a user whose password was set
// at another cost still signs in. The suite runs at 2^10 (test/support/env.ts); production at
// the floor, 2^15, unless raised.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isolatedContext } from './support/context.js';
import { createUser, signInTo, uniqueEmail } from './support/dashboard.js';
import { startGateway, type GatewayProcess } from './support/processes.js';

const { env, db } = isolatedContext('password-cost');
let gateway: GatewayProcess;

beforeAll(async () => {
  gateway = await startGateway(env);
});

afterAll(async () => {
  await gateway?.stop();
});

/** The stored hash's scheme and parameters: `scrypt$N$r$p`. */
async function storedCost(email: string): Promise<string> {
  const { rows } = await db.query<{ password_hash: string }>(
    'SELECT password_hash FROM dashboard_users WHERE email = $1',
    [email],
  );
  return rows[0]!.password_hash.split('$').slice(0, 4).join('$');
}

describe('password hashes', () => {
  it('are made at PASSWORD_SCRYPT_N, the floor when unset, and each is checked at its own cost', async () => {
    const cheap = uniqueEmail('cost-cheap');
    const floor = uniqueEmail('cost-floor');
    await createUser(env, cheap);
    const { PASSWORD_SCRYPT_N: _set, ...unset } = env;
    await createUser(unset, floor);
    expect(await storedCost(cheap)).toBe('scrypt$1024$8$1');
    expect(await storedCost(floor)).toBe('scrypt$32768$8$1');
    // The gateway makes hashes at 2^10: both sign in, the floor's hash checked at the floor.
    for (const email of [cheap, floor]) {
      const client = await signInTo(gateway, email);
      expect((await client.get<{ user: { email: string } }>('/auth/session')).body.user.email).toBe(
        email,
      );
    }
  });
});
