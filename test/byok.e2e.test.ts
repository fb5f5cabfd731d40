// Bring your own key on real requests: credentials picked by priority, failover on 429/quota
// before any byte reached the client (shared cooldowns across instances), the system route as
// the last resort (or a clear error under byok_only), and every usage record naming who served.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isolatedContext } from './support/context.js';
import { bearer, postJson, postSse } from './support/http.js';
import {
  runCliJson,
  seed,
  startGateway,
  type GatewayProcess,
  type SeededOrg,
} from './support/processes.js';
import { eventually } from './support/services.js';

const { prefix, env, db, redis } = isolatedContext('byok');
let gateways: GatewayProcess[];

interface UsageRow {
  request_id: string;
  route: string;
  credential_id: string | null;
  status: string;
  wallet_cost: string;
  input_tokens: number;
}

const chat = {
  model: 'vendor_b/gpt-4o-mini',
  messages: [{ role: 'user', content: 'hello' }],
  max_tokens: 8,
};

async function usageRows(requestIds: string[]): Promise<Map<string, UsageRow>> {
  const rows = await eventually(async () => {
    const { rows: found } = await db.query<UsageRow>(
      'SELECT request_id, route, credential_id, status, wallet_cost::text, input_tokens FROM usage_records WHERE request_id = ANY($1::uuid[])',
      [requestIds],
    );
    return found.length === requestIds.length ? found : undefined;
  }, 15_000);
  return new Map(rows.map((row) => [row.request_id, row]));
}

async function addCredential(
  org: SeededOrg,
  name: string,
  secret: string,
  extra: string[] = [],
): Promise<string> {
  const credential = await runCliJson<{ id: string }>(
    [
      'credentials',
      'add',
      '--org-id',
      org.org_id,
      '--provider',
      'vendor_b',
      '--name',
      name,
      '--secret-stdin',
      '--app-connection-id',
      org.app_connection_id,
      ...extra,
    ],
    env,
    { stdin: secret },
  );
  return credential.id;
}

const failoverLines = (gateway: GatewayProcess): number =>
  gateway
    .output()
    .split('\n')
    .filter((line) => line.includes('provider credential failed over')).length;

beforeAll(async () => {
  gateways = await Promise.all([startGateway(env), startGateway(env)]);
});

afterAll(async () => {
  await Promise.all(gateways.map((gateway) => gateway.stop()));
});

describe('failover across provider credentials', () => {
  it('a 429 on the primary is served by the backup in the same request; every instance then skips the primary until its cooldown ends', async () => {
    const org = await seed(env);
    const primary = await addCredential(org, 'primary', 'mock-429-primary', ['--priority', '1']);
    const backup = await addCredential(org, 'backup', 'mock-ok-backup', ['--priority', '2']);
    // The primary's 429 says retry-after: 30, so the requests below fall within its cooldown
    // however long a loaded machine takes between them.
    const held = { ...chat, messages: [{ role: 'user', content: 'hello mock:retry_after=30' }] };

    const sentAt = Date.now();
    const first = await postJson(
      `${gateways[0]!.url}/v1/chat/completions`,
      held,
      bearer(org.api_key),
    );
    expect(first.status).toBe(200);
    const cooldowns = await redis.hgetall(`${prefix}:{o:${org.org_id}}:cred:cooldown`);
    const until = Number(cooldowns[primary]);
    // retry-after: 30 honoured, from when the 429 came (between sending and reading it here)
    expect(until).toBeGreaterThan(sentAt + 29_000);
    expect(until).toBeLessThanOrEqual(Date.now() + 30_100);

    const before = failoverLines(gateways[1]!);
    const second = await postJson(
      `${gateways[1]!.url}/v1/chat/completions`,
      held,
      bearer(org.api_key),
    );
    const streamed = await postSse(
      `${gateways[1]!.url}/v1/chat/completions`,
      { ...held, stream: true },
      bearer(org.api_key),
    );
    expect(second.status).toBe(200);
    expect(streamed.data.at(-1)).toBe('[DONE]');
    expect(failoverLines(gateways[1]!)).toBe(before); // went straight to the backup

    const ids = [first, second, streamed].map((response) => response.headers.get('x-request-id')!);
    const rows = await usageRows(ids);
    for (const id of ids) {
      expect(rows.get(id)).toMatchObject({
        route: 'byok',
        credential_id: backup,
        status: 'completed',
        wallet_cost: '0.000000000000',
      });
    }
  });

  it('once a cooldown is over the primary is tried (and fails over) again; the backup reads a long prompt whole', async () => {
    const org = await seed(env);
    const primary = await addCredential(org, 'primary', 'mock-429-primary', ['--priority', '1']);
    const backup = await addCredential(org, 'backup', 'mock-ok-backup', ['--priority', '2']);
    // The mock's usual retry-after: 2.
    const first = await postJson(
      `${gateways[1]!.url}/v1/chat/completions`,
      chat,
      bearer(org.api_key),
    );
    expect(first.status).toBe(200);
    const until = Number(await redis.hget(`${prefix}:{o:${org.org_id}}:cred:cooldown`, primary));
    expect(until).toBeGreaterThan(0);

    // With a prompt large enough that undici gets it as an iterable (decision 269).
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, until - Date.now()) + 100));
    const beforeRetry = failoverLines(gateways[0]!) + failoverLines(gateways[1]!);
    const longPrompt = 'the long context of a real prompt '.repeat(400); // 13.6 KB
    const streamedAgain = await postSse(
      `${gateways[0]!.url}/v1/chat/completions`,
      { ...chat, stream: true, messages: [{ role: 'user', content: longPrompt }] },
      bearer(org.api_key),
    );
    expect(streamedAgain.data.at(-1)).toBe('[DONE]');
    expect(failoverLines(gateways[0]!) + failoverLines(gateways[1]!)).toBe(beforeRetry + 1);
    const againId = streamedAgain.headers.get('x-request-id')!;
    const againRow = (await usageRows([againId])).get(againId)!;
    expect(againRow).toMatchObject({ credential_id: backup, status: 'completed' });
    expect(againRow.input_tokens).toBeGreaterThan(2_000); // the vendor counted the whole prompt
  });

  it('falls back to the system route when every credential is exhausted (byok_first), paid by the wallet', async () => {
    const org = await seed(env);
    const quota = await addCredential(org, 'quota', 'mock-quota-only');
    const response = await postJson(
      `${gateways[0]!.url}/v1/chat/completions`,
      chat,
      bearer(org.api_key),
    );
    expect(response.status).toBe(200);
    const row = (await usageRows([response.headers.get('x-request-id')!])).values().next().value!;
    expect(row).toMatchObject({ route: 'system', credential_id: null, status: 'completed' });
    expect(row.wallet_cost).not.toBe('0.000000000000');
    const cooldown = Number(await redis.hget(`${prefix}:{o:${org.org_id}}:cred:cooldown`, quota));
    expect(cooldown).toBeGreaterThan(Date.now() + 60_000); // quota: a long cooldown
  });

  it('answers a clear error under byok_only when no credential can serve', async () => {
    const org = await seed(env);
    const only = await addCredential(org, 'only', 'mock-429-only', ['--routing-mode', 'byok_only']);
    const sentAtMs = Date.now();
    const response = await postJson<{ error: { code: string; message: string } }>(
      `${gateways[0]!.url}/v1/chat/completions`,
      chat,
      bearer(org.api_key),
    );
    expect(response.status).toBe(503);
    expect(response.body.error.code).toBe('gw_provider_credentials_unavailable');
    // The wait until the credential (cooled down by the vendor's 429) may serve again.
    const coolingUntilMs = Number(
      await redis.hget(`${prefix}:{o:${org.org_id}}:cred:cooldown`, only),
    );
    const waitMs = Number(response.headers.get('retry-after-ms'));
    expect(waitMs).toBeGreaterThan(0);
    expect(waitMs).toBeLessThanOrEqual(coolingUntilMs - sentAtMs);
    expect(response.headers.get('retry-after')).toBe(String(Math.ceil(waitMs / 1000)));
    expect(response.body.error.message).toMatch(/; retry in \d+ s$/);
    const stream = await postSse(
      `${gateways[1]!.url}/v1/chat/completions`,
      { ...chat, stream: true },
      bearer(org.api_key),
    );
    expect(stream.status).toBe(503);
    // Refused at admission this time (the credential already cooling down): the same wait.
    expect(Number(stream.headers.get('retry-after-ms'))).toBeGreaterThan(0);
    expect(Number(stream.headers.get('retry-after-ms'))).toBeLessThanOrEqual(waitMs);
    const wallet = await runCliJson<{ reserved: string }>(
      ['wallet', 'show', '--org-id', org.org_id],
      env,
    );
    expect(wallet.reserved).toBe('0.000000000000');
  });

  it('serves requests an empty wallet could not pay, when a credential pays', async () => {
    const org = await seed(env, ['--wallet', '0']);
    const credential = await addCredential(org, 'payer', 'mock-ok-payer');
    const response = await postJson(
      `${gateways[1]!.url}/v1/chat/completions`,
      chat,
      bearer(org.api_key),
    );
    expect(response.status).toBe(200);
    const row = (await usageRows([response.headers.get('x-request-id')!])).values().next().value!;
    expect(row).toMatchObject({
      route: 'byok',
      credential_id: credential,
      wallet_cost: '0.000000000000',
    });
  });

  it('a disabled credential stops being used on every instance once the invalidation arrives', async () => {
    const org = await seed(env);
    const credential = await addCredential(org, 'soon disabled', 'mock-ok-disable');
    for (const gateway of gateways)
      expect(
        (await postJson(`${gateway.url}/v1/chat/completions`, chat, bearer(org.api_key))).status,
      ).toBe(200);
    await runCliJson(['credentials', 'disable', '--id', credential], env);
    // The CLI's change reaches each instance by pub/sub: until it arrives, the instance still
    // serves with the credential; once it has, with gw's own route.
    for (const gateway of gateways) {
      const row = await eventually(async () => {
        const answer = await postJson(
          `${gateway.url}/v1/chat/completions`,
          chat,
          bearer(org.api_key),
        );
        expect(answer.status).toBe(200);
        const [served] = (await usageRows([answer.headers.get('x-request-id')!])).values();
        return served!.route === 'byok' ? undefined : served;
      }, 15_000);
      expect(row).toMatchObject({ route: 'system', credential_id: null });
    }
  });

  it('rotates between credentials of the same priority', async () => {
    const org = await seed(env);
    const first = await addCredential(org, 'tier a', 'mock-ok-tier-a');
    const second = await addCredential(org, 'tier b', 'mock-ok-tier-b');
    const responses = [];
    for (let index = 0; index < 6; index += 1) {
      responses.push(
        await postJson(
          `${gateways[index % 2]!.url}/v1/chat/completions`,
          chat,
          bearer(org.api_key),
        ),
      );
    }
    const rows = await usageRows(
      responses.map((response) => response.headers.get('x-request-id')!),
    );
    const counts = new Map<string | null, number>();
    for (const row of rows.values())
      counts.set(row.credential_id, (counts.get(row.credential_id) ?? 0) + 1);
    expect(counts.get(first)).toBe(3);
    expect(counts.get(second)).toBe(3);
  });

  it('under 500 concurrent requests with the primary failing half the time, none fails and each record names its credential', async () => {
    const org = await seed(env);
    const flaky = await addCredential(org, 'flaky', 'mock-flaky-primary', ['--priority', '1']);
    const healthy = await addCredential(org, 'healthy', 'mock-ok-healthy', ['--priority', '2']);
    const responses = await Promise.all(
      Array.from({ length: 500 }, (_, index) =>
        postJson(`${gateways[index % 2]!.url}/v1/chat/completions`, chat, bearer(org.api_key)),
      ),
    );
    expect(responses.filter((response) => response.status !== 200)).toHaveLength(0);
    const rows = await usageRows(
      responses.map((response) => response.headers.get('x-request-id')!),
    );
    const served = new Set([...rows.values()].map((row) => row.credential_id));
    for (const credential of served) expect([flaky, healthy]).toContain(credential);
    expect(served.has(healthy)).toBe(true);
  });
});
