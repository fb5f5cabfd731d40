// JSON bodies of gw's own write routes (service-key product-user routes, the dashboard API)
// are read one way only: a body that names a field twice, or that is not UTF-8, is refused
// with nothing changed, where JSON.parse would silently keep the last value or store U+FFFD.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isolatedContext } from './support/context.js';
import { createMember, signInTo, uniqueEmail, type DashboardClient } from './support/dashboard.js';
import { bearer, type ErrorBody } from './support/http.js';
import { seed, startGateway, type GatewayProcess, type SeededOrg } from './support/processes.js';

const { env, db } = isolatedContext('mgmt-json');
let gateway: GatewayProcess;
let org: SeededOrg;
let admin: DashboardClient;

beforeAll(async () => {
  gateway = await startGateway(env);
  org = await seed(env);
  const email = uniqueEmail('json-admin');
  await createMember(env, email, org.org_id, 'admin');
  admin = await signInTo(gateway, email);
});
afterAll(async () => {
  await gateway?.stop();
});

async function send(
  method: string,
  path: string,
  body: string | Buffer,
  headers: Record<string, string>,
): Promise<{ status: number; body: ErrorBody & Record<string, unknown> }> {
  const response = await fetch(`${gateway.url}${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...headers },
    body,
  });
  return { status: response.status, body: (await response.json()) as ErrorBody };
}

const asService = (method: string, path: string, body: string | Buffer) =>
  send(method, path, body, bearer(org.service_key));

const asDashboard = (method: string, path: string, body: string) =>
  send(method, path, body, {
    cookie: admin.cookie!,
    'x-csrf-token': admin.csrfToken!,
    origin: admin.origin,
  });

async function count(table: string, where: string, params: unknown[]): Promise<number> {
  const { rows } = await db.query<{ n: string }>(
    `SELECT count(*) AS n FROM ${table} WHERE ${where}`,
    params,
  );
  return Number(rows[0]!.n);
}

describe('a field named twice', () => {
  it('is refused on a credit grant, and nothing is granted (not the last amount, not the first)', async () => {
    const created = await asService(
      'PUT',
      '/product-users/by-external-id',
      JSON.stringify({ app_id: org.app_id, external_user_id: 'twice-grant' }),
    );
    expect(created.status).toBe(201);
    const grants = () =>
      count('credit_grants', 'org_id = $1 AND product_user_id = $2', [
        org.org_id,
        created.body.product_end_user_id,
      ]);
    const answer = await asService(
      'POST',
      '/product-users/by-external-id/credit-grants',
      `{"app_id":"${org.app_id}","external_user_id":"twice-grant","amount":"0.01","amount":"500"}`,
    );
    expect(answer.status).toBe(400);
    expect(answer.body.error.code).toBe('gw_invalid_request');
    expect(answer.body.error.message).toBe('amount: must be sent once');
    expect(await grants()).toBe(0);
    // nor in the live balance (Redis) the profile reads
    const summary = await fetch(
      `${gateway.url}/product-users/by-external-id/credit-summary?app_id=${org.app_id}&external_user_id=twice-grant`,
      { headers: bearer(org.service_key) },
    );
    expect(((await summary.json()) as { available_credits: string }).available_credits).toBe(
      '0.000000000000',
    );
  });

  it('is refused when the names differ only in their escapes, and in a nested object', async () => {
    const escaped = await asService(
      'PUT',
      '/product-users/by-external-id',
      `{"app_id":"${org.app_id}","external_user_id":"first","external_user_\\u0069d":"second"}`,
    );
    expect(escaped.status).toBe(400);
    expect(escaped.body.error.message).toBe('external_user_id: must be sent once');
    expect(
      await count('product_users', 'org_id = $1 AND external_user_id IN ($2, $3)', [
        org.org_id,
        'first',
        'second',
      ]),
    ).toBe(0);

    const connectionsBefore = await count('app_connections', 'app_id = $1', [org.app_id]);
    const nested = await asDashboard(
      'POST',
      `/dashboard/api/apps/${org.app_id}/connections`,
      '{"name":"twice","credit_mode":"enforce","x":{"a":1,"a":2}}',
    );
    expect(nested.status).toBe(400);
    // the repeated name is found before the schema would refuse the unknown field
    expect(nested.body.error).toEqual({
      code: 'gw_invalid_request',
      message: 'a: must be sent once',
    });
    expect(await count('app_connections', 'app_id = $1', [org.app_id])).toBe(connectionsBefore);
  });

  it('is refused on a dashboard write, which creates nothing', async () => {
    const before = await count('apps', 'org_id = $1', [org.org_id]);
    const answer = await asDashboard(
      'POST',
      `/dashboard/api/orgs/${org.org_id}/apps`,
      '{"name":"shown","name":"stored"}',
    );
    expect(answer.status).toBe(400);
    expect(answer.body.error).toEqual({
      code: 'gw_invalid_request',
      message: 'name: must be sent once',
    });
    expect(await count('apps', 'org_id = $1', [org.org_id])).toBe(before);
  });

  it('names a field it cannot quote safely only as "a field"', async () => {
    const answer = await asDashboard(
      'POST',
      `/dashboard/api/orgs/${org.org_id}/apps`,
      '{"name":"x","b\\u0000d":1,"b\\u0000d":2}',
    );
    expect(answer.status).toBe(400);
    expect(answer.body.error.message).toBe('a field: must be sent once');
  });

  it('is still served on the inference routes, as the vendors serve it (the last value)', async () => {
    const answer = await send(
      'POST',
      '/v1/chat/completions',
      '{"model":"vendor_b/gpt-4o-mini","max_tokens":4,"max_tokens":8,"messages":[{"role":"user","content":"hi"}]}',
      bearer(org.api_key),
    );
    expect(answer.status).toBe(200);
  });

  it('leaves a name that only looks alike (another case, or inside a string value) alone', async () => {
    const answer = await asService(
      'PUT',
      '/product-users/by-external-id',
      JSON.stringify({
        app_id: org.app_id,
        external_user_id: 'look-alike',
        display_name: '{"display_name":1,"display_name":2}',
      }),
    );
    expect(answer.status).toBe(201);
    expect(answer.body.display_name).toBe('{"display_name":1,"display_name":2}');
  });
});

describe('a body that is not UTF-8', () => {
  it('is refused on the service-key routes instead of being stored with U+FFFD', async () => {
    const body = Buffer.concat([
      Buffer.from(`{"app_id":"${org.app_id}","external_user_id":"latin1-user","display_name":"Ren`),
      Buffer.from([0xe9]), // é in latin-1: not UTF-8
      Buffer.from('e"}'),
    ]);
    const answer = await asService('PUT', '/product-users/by-external-id', body);
    expect(answer.status).toBe(400);
    expect(answer.body.error).toEqual({
      code: 'gw_invalid_json',
      message: 'the request body is not valid UTF-8',
    });
    expect(
      await count('product_users', 'org_id = $1 AND external_user_id = $2', [
        org.org_id,
        'latin1-user',
      ]),
    ).toBe(0);
  });

  it('keeps a real U+FFFD, which is valid UTF-8', async () => {
    const answer = await asService(
      'PUT',
      '/product-users/by-external-id',
      JSON.stringify({
        app_id: org.app_id,
        external_user_id: 'replacement-char',
        display_name: 'a\uFFFDb',
      }),
    );
    expect(answer.status).toBe(201);
    expect(answer.body.display_name).toBe('a\uFFFDb');
  });
});

describe('a field the schema does not know', () => {
  it('is named in the refusal only when its name is a short plain identifier', async () => {
    const hostileName = `${'k'.repeat(100_000)}\n\u001b[31m`;
    const answer = await asService(
      'PUT',
      '/product-users/by-external-id',
      JSON.stringify({
        app_id: org.app_id,
        external_user_id: 'unknown-fields',
        nickname: 1,
        [hostileName]: 1,
      }),
    );
    expect(answer.status).toBe(400);
    expect(answer.body.error).toEqual({
      code: 'gw_invalid_request',
      message: 'body: unknown fields nickname, a field whose name is not shown',
    });
  });
});
