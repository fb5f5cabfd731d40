// Idempotency-Keys of the dashboard's creates under attack and after accidents (decisions 372
// and 379), through started gateways on the real Redis and Postgres: a key is its caller's, so
// another member of the organization sending the same key and body makes their own object and
// never sees the first caller's answer (a secret shown once); a viewer is refused before any
// replay; the same JSON in another order or spacing is the same request; a first request
// claimed before leases whose gateway died mid-request is answered as abandoned after a bound,
// not "still being processed" for 24 hours; stored answers open after a master-key rotation with the previous
// key kept, are answered with a clear 409 (not a 500) without it, and open again once
// `gw credentials rewrap` has re-sealed them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  IDEMPOTENCY_KEY_ABANDONED_AFTER_MS,
  requestFingerprint,
} from '../src/idempotency/store.js';
import { isolatedContext } from './support/context.js';
import {
  createMember,
  onGateway,
  signInTo,
  type DashboardClient,
  uniqueEmail,
  type DashboardAnswer,
  newIdempotencyKey,
  withIdempotencyKey,
} from './support/dashboard.js';
import {
  runCliJson,
  seed,
  startGateway,
  type GatewayProcess,
  type SeededOrg,
} from './support/processes.js';
import type { ErrorBody } from './support/http.js';

const { env, db } = isolatedContext('idem-sec');
let gateway: GatewayProcess;
let tenant: SeededOrg;
let admin: DashboardClient;
let adminUserId: string;
let secondAdmin: DashboardClient;
let viewer: DashboardClient;

interface CreatedKey {
  id: string;
  key: string;
}

const apiKeysPath = () => `/dashboard/api/connections/${tenant.app_connection_id}/api-keys`;
const appsPath = () => `/dashboard/api/orgs/${tenant.org_id}/apps`;

async function apiKeysNamed(name: string): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>('SELECT id FROM api_keys WHERE name = $1', [
    name,
  ]);
  return rows.map((row) => row.id);
}

beforeAll(async () => {
  gateway = await startGateway(env);
  tenant = await seed(env);
  const [adminEmail, secondEmail, viewerEmail] = [
    uniqueEmail('idem-sec-admin'),
    uniqueEmail('idem-sec-admin2'),
    uniqueEmail('idem-sec-viewer'),
  ];
  const made = await createMember(env, adminEmail, tenant.org_id, 'admin');
  adminUserId = made.id;
  await createMember(env, secondEmail, tenant.org_id, 'admin');
  await createMember(env, viewerEmail, tenant.org_id, 'viewer');
  [admin, secondAdmin, viewer] = await Promise.all([
    signInTo(gateway, adminEmail),
    signInTo(gateway, secondEmail),
    signInTo(gateway, viewerEmail),
  ]);
});

afterAll(async () => {
  await gateway?.stop();
});

describe("an Idempotency-Key is its caller's", () => {
  it("another admin of the organization sending the same key and body gets their own API key, never the first one's secret", async () => {
    const key = newIdempotencyKey();
    const body = { name: `shared-key ${key.slice(-6)}` };
    const first = await admin.post<CreatedKey>(apiKeysPath(), body, withIdempotencyKey(key));
    expect(first.status).toBe(201);
    const other = await secondAdmin.post<CreatedKey>(apiKeysPath(), body, withIdempotencyKey(key));
    expect(other.status).toBe(201);
    expect(other.headers.get('idempotent-replayed')).toBeNull();
    expect(other.body.key).not.toBe(first.body.key);
    expect(other.body.id).not.toBe(first.body.id);
    expect((await apiKeysNamed(body.name)).sort()).toEqual([first.body.id, other.body.id].sort());
    // Each caller's own replay still answers their own first answer.
    const mine = await secondAdmin.post<CreatedKey>(apiKeysPath(), body, withIdempotencyKey(key));
    expect(mine.headers.get('idempotent-replayed')).toBe('true');
    expect(mine.body).toEqual(other.body);
    const { rows } = await db.query<{ caller: string }>(
      'SELECT caller FROM idempotency_keys WHERE org_id = $1 AND key = $2 ORDER BY caller',
      [tenant.org_id, key],
    );
    expect(rows).toHaveLength(2);
    expect(rows.map((row) => row.caller)).toContain(`user:${adminUserId}`);
  });

  it("a viewer sending an admin's key and body is refused by role before any replay", async () => {
    const key = newIdempotencyKey();
    const body = { name: `viewer-replay ${key.slice(-6)}` };
    const first = await admin.post<CreatedKey>(apiKeysPath(), body, withIdempotencyKey(key));
    expect(first.status).toBe(201);
    const refused = await viewer.post<ErrorBody>(apiKeysPath(), body, withIdempotencyKey(key));
    expect(refused.status).toBe(403);
    expect(refused.headers.get('idempotent-replayed')).toBeNull();
    expect(JSON.stringify(refused.body)).not.toContain(first.body.key);
    expect(await apiKeysNamed(body.name)).toEqual([first.body.id]);
  });
});

describe('the request a key is bound to', () => {
  it('is the JSON, not its bytes: the same fields in another order and spacing replay', async () => {
    const key = newIdempotencyKey();
    const email = uniqueEmail('idem-sec-invitee');
    const path = `/dashboard/api/orgs/${tenant.org_id}/invitations`;
    const send = async (raw: string): Promise<DashboardAnswer<{ id: string }>> => {
      const response = await fetch(`${gateway.url}${path}`, {
        method: 'POST',
        headers: {
          cookie: admin.cookie!,
          origin: admin.origin,
          'x-csrf-token': admin.csrfToken!,
          'content-type': 'application/json',
          'idempotency-key': key,
        },
        body: raw,
      });
      return {
        status: response.status,
        headers: response.headers,
        body: (await response.json()) as { id: string },
      };
    };
    const first = await send(JSON.stringify({ email, role: 'admin' }));
    expect(first.status).toBe(201);
    const reordered = await send(`{\n  "role" : "admin",\t"email":${JSON.stringify(email)} }`);
    expect(reordered.status).toBe(201);
    expect(reordered.headers.get('idempotent-replayed')).toBe('true');
    expect(reordered.body).toEqual(first.body);
    // Another value is another request.
    const other = await send(JSON.stringify({ email, role: 'owner' }));
    expect(other.status).toBe(409);
    expect((other.body as unknown as ErrorBody).error.code).toBe('gw_idempotency_key_reused');
  });
});

describe('a first request that never answered', () => {
  it('claimed before leases, is "still being processed" (Retry-After) while recent, and abandoned past the bound, never run again', async () => {
    const key = newIdempotencyKey();
    const name = `crashed ${key.slice(-6)}`;
    // What a gateway from before leases (migration 068) killed between the claim and the answer
    // leaves: a running row without a claim id, whose effect is unknown. Leased keys:
    // test/dashboard-idempotency.lease.e2e.test.ts.
    await db.query(
      `INSERT INTO idempotency_keys (org_id, caller, route, key, request_hash, state, expires_at)
       VALUES ($1, $2, 'POST /dashboard/api/orgs/{org_id}/apps', $3, $4, 'running',
               now() + interval '1 day')`,
      [tenant.org_id, `user:${adminUserId}`, key, requestFingerprint(appsPath(), { name })],
    );
    const running = await admin.post<ErrorBody>(appsPath(), { name }, withIdempotencyKey(key));
    expect(running.status).toBe(409);
    expect(running.body.error.code).toBe('gw_conflict');
    expect(running.headers.get('retry-after')).toBe('1');
    expect(running.body.error.message).toContain('still being processed');

    await db.query(
      `UPDATE idempotency_keys SET created_at = now() - $3 * interval '1 millisecond'
        WHERE org_id = $1 AND key = $2`,
      [tenant.org_id, key, IDEMPOTENCY_KEY_ABANDONED_AFTER_MS + 1000],
    );
    const abandoned = await admin.post<ErrorBody>(appsPath(), { name }, withIdempotencyKey(key));
    expect(abandoned.status).toBe(409);
    expect(abandoned.body.error.code).toBe('gw_conflict');
    expect(abandoned.headers.get('retry-after')).toBeNull();
    expect(abandoned.body.error.message).toMatch(
      /started at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ and has not recorded its answer .* it may or may not have taken effect: check, then use a new key/,
    );
    const { rows } = await db.query('SELECT 1 FROM apps WHERE org_id = $1 AND name = $2', [
      tenant.org_id,
      name,
    ]);
    expect(rows).toHaveLength(0);
  });
});

describe('stored answers across a master-key rotation', () => {
  const newMasterKey = Buffer.alloc(32, 9).toString('base64');
  const rotatedEnv = () => ({
    ...env,
    CREDENTIALS_MASTER_KEY: newMasterKey,
    CREDENTIALS_MASTER_KEY_ID: 'test-k2',
    CREDENTIALS_PREVIOUS_KEYS: `${env.CREDENTIALS_MASTER_KEY_ID}:${env.CREDENTIALS_MASTER_KEY}`,
  });
  const newKeyOnlyEnv = () => {
    const { CREDENTIALS_PREVIOUS_KEYS: _previous, ...rest } = rotatedEnv();
    return rest;
  };

  it('replay with the previous key kept, are a clear 409 without it, and replay again after gw credentials rewrap', async () => {
    const key = newIdempotencyKey();
    const body = { name: `rotation ${key.slice(-6)}` };
    const first = await admin.post<CreatedKey>(apiKeysPath(), body, withIdempotencyKey(key));
    expect(first.status).toBe(201);
    const [rotated, newKeyOnly] = await Promise.all([
      startGateway(rotatedEnv()),
      startGateway(newKeyOnlyEnv()),
    ]);
    try {
      const kept = await onGateway(admin, rotated).post<CreatedKey>(
        apiKeysPath(),
        body,
        withIdempotencyKey(key),
      );
      expect(kept.status).toBe(201);
      expect(kept.headers.get('idempotent-replayed')).toBe('true');
      expect(kept.body).toEqual(first.body);

      const unopenable = await onGateway(admin, newKeyOnly).post<ErrorBody>(
        apiKeysPath(),
        body,
        withIdempotencyKey(key),
      );
      expect(unopenable.status).toBe(409);
      expect(unopenable.body.error.code).toBe('gw_conflict');
      expect(unopenable.body.error.message).toContain('gw credentials rewrap');

      const rewrap = await runCliJson<{ idempotent_answers_rewrapped: number }>(
        ['credentials', 'rewrap', '--org-id', tenant.org_id],
        rotatedEnv(),
      );
      expect(rewrap.idempotent_answers_rewrapped).toBeGreaterThanOrEqual(1);
      const { rows } = await db.query<{ answer_sealed: string }>(
        'SELECT answer_sealed FROM idempotency_keys WHERE org_id = $1 AND key = $2',
        [tenant.org_id, key],
      );
      expect(rows[0]!.answer_sealed.startsWith('test-k2:')).toBe(true);
      const reopened = await onGateway(admin, newKeyOnly).post<CreatedKey>(
        apiKeysPath(),
        body,
        withIdempotencyKey(key),
      );
      expect(reopened.status).toBe(201);
      expect(reopened.body).toEqual(first.body);
      expect(await apiKeysNamed(body.name)).toEqual([first.body.id]);
    } finally {
      await Promise.all([rotated.stop(), newKeyOnly.stop()]);
    }
  }, 90_000);
});
