// Allowances, caps and credits enforced on real requests through three gateway instances
// sharing Redis and Postgres: exactly K of 200 racing requests succeed, and Redis counters,
// the profile and the Postgres ledger agree to the nano-unit.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMockVendors, type RunningMockVendors } from '../src/mock-vendors/server.js';
import { masters } from '../src/redis/connect.js';
import { monthlyPeriod } from '../src/periods.js';
import { countInputTokens } from '../src/tokens/count.js';
import { chatCompletionTexts } from '../src/tokens/request-texts.js';
import { startClosingFront, type ClosingFront } from './support/closing-vendor.js';
import { isolatedContext } from './support/context.js';
import { vendorsAt } from './support/env.js';
import { bearer, getJson, postJson, type ErrorBody } from './support/http.js';
import {
  type GatewayProcess,
  runCliJson,
  seed,
  type SeededOrg,
  setProductUserCap,
  startGateway,
} from './support/processes.js';
import { responseSchema, schemaProblems } from './support/openapi-check.js';
import { eventually, firstChangedAnswer, firstNot200 } from './support/services.js';

const { env, db, redis, prefix } = isolatedContext('allowe2e');
let gateways: GatewayProcess[];
let vendor: RunningMockVendors;
/** Holds a request marked `front:hold=<name>` from the vendor until the test releases it. */
let front: ClosingFront;
/** A fourth instance, its vendors the mock behind the front: requests in flight at will. */
let behindFront: GatewayProcess;

const OUTPUT_TOKENS = 8;
const body = (user: string) => ({
  model: 'vendor_b/gpt-4o-mini',
  max_tokens: OUTPUT_TOKENS,
  messages: [{ role: 'user', content: 'count to eight' }],
  user,
});
// Every request costs exactly this: the estimate (same tokenizer, max_tokens = output) equals it.
const inputTokens = countInputTokens(chatCompletionTexts(body('x')));
const costNano = BigInt(inputTokens) * 150n + BigInt(OUTPUT_TOKENS) * 600n;
const decimal = (nano: bigint) =>
  `${nano / 1_000_000_000n}.${(nano % 1_000_000_000n).toString().padStart(9, '0')}000`;

/** Sends n requests at once, spread over the three instances. */
async function burst(
  n: number,
  key: string,
  userFor: (index: number) => string,
  headers: Record<string, string> = {},
) {
  return Promise.all(
    Array.from({ length: n }, (_, index) =>
      postJson<ErrorBody>(
        `${gateways[index % gateways.length]!.url}/v1/chat/completions`,
        body(userFor(index)),
        {
          ...bearer(key),
          ...headers,
        },
      ),
    ),
  );
}

async function ledgerSum(
  column: 'product_user_id' | 'app_connection_id' | 'org_id',
  id: string,
  expectedRows: number,
) {
  return eventually(async () => {
    const { rows } = await db.query<{ total: string; count: string }>(
      `SELECT COALESCE(sum(sell_cost), 0)::text AS total, count(*)::text AS count
         FROM usage_records WHERE ${column} = $1 AND status = 'completed'`,
      [id],
    );
    return Number(rows[0]!.count) === expectedRows ? rows[0]!.total : undefined;
  }, 10_000);
}

/** `gw cap set --scope product_user` for one user of an org's app. */
function setUserCap(org: SeededOrg, user: string, amount: string, flags: string[] = []) {
  return setProductUserCap(env, org.app_id, user, amount, flags);
}

/** `gw credits grant` for one user of an org's app. */
function grantCredits(org: SeededOrg, user: string, amount: string) {
  return runCliJson(
    ['credits', 'grant', '--app-id', org.app_id, '--external-user-id', user, '--amount', amount],
    env,
  );
}

beforeAll(async () => {
  vendor = await startMockVendors({ port: 0 });
  front = await startClosingFront({ mode: 'pass', upstreamPort: vendor.port });
  [gateways, behindFront] = await Promise.all([
    Promise.all([startGateway(env), startGateway(env), startGateway(env)]),
    startGateway({ ...env, ...vendorsAt(front.url) }),
  ]);
});

afterAll(async () => {
  await Promise.all([...(gateways ?? []), behindFront].map((gateway) => gateway?.stop()));
  await front?.stop();
  await vendor?.close();
});

describe('exact enforcement under concurrency (3 instances)', () => {
  it('a product-user allowance covering K requests lets exactly K of 200 through', async () => {
    const org = await seed(env);
    const k = 17;
    await setUserCap(org, 'racer', decimal(costNano * BigInt(k)), [
      '--credit-mode',
      'enforce',
      '--overrun-policy',
      'reject',
    ]);
    const responses = await burst(200, org.api_key, () => 'racer');
    expect(responses.filter((response) => response.status === 200)).toHaveLength(k);
    const refused = responses.filter((response) => response.status !== 200);
    expect(refused.every((response) => response.status === 403)).toBe(true);
    expect(
      new Set(refused.map((response) => response.body.error.provider_specific_fields?.error.code)),
    ).toEqual(new Set(['gw_product_user_allowance_insufficient']));

    const { rows } = await db.query<{ id: string }>(
      'SELECT id FROM product_users WHERE app_id = $1 AND external_user_id = $2',
      [org.app_id, 'racer'],
    );
    expect(await ledgerSum('product_user_id', rows[0]!.id, k)).toBe(decimal(costNano * BigInt(k)));
    const profile = await getJson<{ allowance: Record<string, string> }>(
      `${gateways[0]!.url}/product-users/by-external-id?app_id=${org.app_id}&external_user_id=racer`,
      bearer(org.service_key),
    );
    expect(profile.body.allowance).toMatchObject({
      spent_this_period: decimal(costNano * BigInt(k)),
      remaining_base_allowance: '0.000000000000',
      available_allowance: '0.000000000000',
    });
  });

  it('an app-connection cap shared by many users lets exactly K of 200 through', async () => {
    const org = await seed(env);
    const k = 23;
    await runCliJson(
      [
        'cap',
        'set',
        '--scope',
        'app_connection',
        '--app-connection-id',
        org.app_connection_id,
        '--amount',
        decimal(costNano * BigInt(k)),
      ],
      env,
    );
    const responses = await burst(200, org.api_key, (index) => `conn-user-${index}`);
    expect(responses.filter((response) => response.status === 200)).toHaveLength(k);
    const refused = responses.filter((response) => response.status !== 200);
    expect(
      new Set(refused.map((response) => `${response.status} ${response.body.error.code}`)),
    ).toEqual(new Set(['403 gw_cap_exceeded']));
    expect(refused[0]!.body.error.message).toMatch(/app connection cap/);
    expect(await ledgerSum('app_connection_id', org.app_connection_id, k)).toBe(
      decimal(costNano * BigInt(k)),
    );
  });

  it('an org cap lets exactly K of 200 through', async () => {
    const org = await seed(env);
    const k = 11;
    await runCliJson(
      [
        'cap',
        'set',
        '--scope',
        'org',
        '--org-id',
        org.org_id,
        '--amount',
        decimal(costNano * BigInt(k)),
      ],
      env,
    );
    const responses = await burst(200, org.api_key, (index) => `org-user-${index % 7}`);
    expect(responses.filter((response) => response.status === 200)).toHaveLength(k);
    expect(responses.find((response) => response.status !== 200)!.body.error).toMatchObject({
      code: 'gw_cap_exceeded',
    });
    expect(await ledgerSum('org_id', org.org_id, k)).toBe(decimal(costNano * BigInt(k)));
  });
});

describe('a cap cleared and set again', () => {
  // While no cap is set, the cap's account in Redis (if any is left from before) is still
  // charged: set again, it holds what the month spent, as the ledger does.
  it.each(['org', 'app_connection'] as const)(
    'counts what the %s spent while it had no cap',
    async (scope) => {
      const org = await seed(env);
      const target =
        scope === 'org' ? ['--org-id', org.org_id] : ['--app-connection-id', org.app_connection_id];
      const setCap = () =>
        runCliJson(
          ['cap', 'set', '--scope', scope, ...target, '--amount', decimal(costNano * 10n)],
          env,
        );
      const sendOne = (index: number) =>
        postJson<ErrorBody>(
          `${gateways[index % gateways.length]!.url}/v1/chat/completions`,
          body(`recap-${index % 3}`),
          bearer(org.api_key),
        );
      await setCap();
      // Half the cap spent, then none while it is cleared: set again, the cap is long spent.
      for (let index = 0; index < 5; index += 1) expect((await sendOne(index)).status).toBe(200);
      await runCliJson(['cap', 'clear', '--scope', scope, ...target], env);
      // Likewise the clearing: an instance that still holds the cap refuses (charging nothing).
      for (let index = 0; index < 10; index += 1) {
        await eventually(async () => ((await sendOne(index)).status === 200 ? true : undefined));
      }
      await setCap();
      // The cap reaches each instance by pub/sub a moment after the CLI returns (on a
      // cluster, past the cluster bus): a call an instance serves before then is counted.
      let servedBeforeCapArrived = 0;
      for (let index = 0; index < gateways.length; index += 1) {
        const refused = await eventually(async () => {
          const response = await sendOne(index);
          if (response.status !== 200) return response;
          servedBeforeCapArrived += 1;
          return undefined;
        });
        expect([refused.status, refused.body.error.code]).toEqual([403, 'gw_cap_exceeded']);
      }
      const spent = 15 + servedBeforeCapArrived;
      const column = scope === 'org' ? 'org_id' : 'app_connection_id';
      const id = scope === 'org' ? org.org_id : org.app_connection_id;
      expect(await ledgerSum(column, id, spent)).toBe(decimal(costNano * BigInt(spent)));
      const month = monthlyPeriod(new Date(), null).key;
      const account =
        scope === 'org'
          ? `${prefix}:{o:${org.org_id}}:cap:org:${month}`
          : `${prefix}:{o:${org.org_id}}:cap:conn:${org.app_connection_id}:${month}`;
      expect(await redis.hmget(account, 'spent', 'reserved')).toEqual([
        String(costNano * BigInt(spent)),
        '0',
      ]);
      expect(await runCliJson(['reconcile', '--org-id', org.org_id], env)).toMatchObject({
        consistent: 1,
        drifted: 0,
        orgs: [],
      });
    },
  );
});

describe('allowance rules on single requests', () => {
  let org: SeededOrg;
  beforeAll(async () => {
    org = await seed(env);
  });
  const send = (
    user: string,
    extra: Record<string, unknown> = {},
    headers: Record<string, string> = {},
  ) =>
    postJson<ErrorBody & { usage: { completion_tokens: number } }>(
      `${gateways[0]!.url}/v1/chat/completions`,
      { ...body(user), ...extra },
      { ...bearer(org.api_key), ...headers },
    );

  it('rejects with the exact 403 shape, and the legacy code for legacy clients', async () => {
    await setUserCap(org, 'poor', '0.000001', ['--overrun-policy', 'reject']);
    await grantCredits(org, 'poor', '0.000000500');
    const response = await send('poor');
    expect(response.status).toBe(403);
    const { error } = response.body;
    expect(error.code).toBe('403');
    expect(error.provider_specific_fields!.error.code).toBe(
      'gw_product_user_allowance_insufficient',
    );
    expect(error.provider_specific_fields!.error.message).toBe(error.message);
    expect(error.message).toContain(decimal(costNano));
    expect(error.provider_specific_fields!.error.params).toEqual({
      cap_amount: '0.000001000000',
      remaining_base_allowance: '0.000001000000',
      promotional_credit_balance: '0.000000500000',
      available_allowance: '0.000001500000',
      estimated_request_cost: decimal(costNano),
      shortfall: decimal(costNano - 1_500n),
    });
    const legacy = await send('poor', {}, { 'x-gw-legacy-errors': 'true' });
    expect(legacy.body.error.provider_specific_fields!.error.code).toBe(
      'gw_product_user_credits_insufficient',
    );
  });

  it('answers bodies that /openapi.json describes: the 403 allowance shape and the standard one, in both protocols', async () => {
    await setUserCap(org, 'documented', '0.000001', ['--overrun-policy', 'reject']);
    const document = (await getJson(`${gateways[0]!.url}/openapi.json`)).body;
    const chat = await send('documented');
    const legacy = await send('documented', {}, { 'x-gw-legacy-errors': 'true' });
    const messages = await postJson<ErrorBody>(
      `${gateways[0]!.url}/v1/messages`,
      {
        model: 'vendor_a/claude-haiku-4-5',
        max_tokens: OUTPUT_TOKENS,
        messages: [{ role: 'user', content: 'count to eight' }],
        metadata: { external_user_id: 'documented' },
      },
      { 'x-api-key': org.api_key },
    );
    await runCliJson(
      ['product-user', 'block', '--app-id', org.app_id, '--external-user-id', 'documented'],
      env,
    );
    // the block reaches the gateway by pub/sub (it has the user cached): refused for the cap
    // as before until it arrives
    const blocked = await firstChangedAnswer(
      () => send('documented'),
      (answer) =>
        answer.body.error?.provider_specific_fields?.error.code ===
        'gw_product_user_allowance_insufficient',
    );
    for (const [path, response, code] of [
      ['/v1/chat/completions', chat, 'gw_product_user_allowance_insufficient'],
      ['/v1/chat/completions', legacy, 'gw_product_user_credits_insufficient'],
      ['/v1/messages', messages, 'gw_product_user_allowance_insufficient'],
      ['/v1/chat/completions', blocked, 'gw_product_user_blocked'],
    ] as const) {
      expect(response.status, code).toBe(403);
      const error = response.body.error;
      expect(error.provider_specific_fields?.error.code ?? error.code, path).toBe(code);
      const schema = responseSchema(document, path, 'post', 403);
      expect(schemaProblems(document, schema, response.body), `${path} ${code}`).toEqual([]);
    }
    // The schema tells the shapes apart: the allowance body with its gw_ code in error.code
    // (what the schema used to demand) matches none of them.
    const schema = responseSchema(document, '/v1/chat/completions', 'post', 403);
    const mislabelled = {
      error: { ...chat.body.error, code: 'gw_product_user_allowance_insufficient' },
    };
    expect(schemaProblems(document, schema, mislabelled)).not.toEqual([]);
  });

  it('limit_output clamps max_tokens to what the allowance covers', async () => {
    // Room for the input and exactly 20 output tokens.
    const allowance = BigInt(inputTokens) * 150n + 20n * 600n;
    await setUserCap(org, 'clamped', decimal(allowance), ['--overrun-policy', 'limit_output']);
    const response = await send('clamped', {
      max_tokens: 500,
      messages: [
        { role: 'user', content: 'count to eight' },
        { role: 'user', content: 'mock:output_tokens=400' },
      ],
    });
    expect(response.status).toBe(200);
    expect(response.body.usage.completion_tokens).toBeLessThanOrEqual(20);
  });

  it('limit_output refuses what cannot afford even 16 output tokens, and says so', async () => {
    // Room for the input and 15 output tokens: one short of the least it lowers a request to.
    const allowance = BigInt(inputTokens) * 150n + 15n * 600n;
    await setUserCap(org, 'too-poor', decimal(allowance), ['--overrun-policy', 'limit_output']);
    const response = await send('too-poor', { max_tokens: 500 });
    expect(response.status).toBe(403);
    const least = BigInt(inputTokens) * 150n + 16n * 600n;
    const worst = BigInt(inputTokens) * 150n + 500n * 600n;
    expect(response.body.error.message).toBe(
      `estimated request cost ${decimal(worst)} USD exceeds the product user's remaining ` +
        `allowance of ${decimal(allowance)} USD, which cannot cover even 16 output tokens ` +
        `(${decimal(least)} USD), the least the limit_output policy lowers a request to`,
    );
    expect(response.body.error.provider_specific_fields!.error.params).toMatchObject({
      available_allowance: decimal(allowance),
      estimated_request_cost: decimal(worst),
      shortfall: decimal(worst - allowance),
    });
  });

  it('spends credits once the base allowance is gone', async () => {
    await setUserCap(org, 'credited', '0', ['--overrun-policy', 'reject']);
    expect((await send('credited')).status).toBe(403);
    await grantCredits(org, 'credited', decimal(costNano * 2n));
    expect((await send('credited')).status).toBe(200);
    expect((await send('credited')).status).toBe(200);
    expect((await send('credited')).status).toBe(403);
  });

  it('revoked credits can no longer be spent', async () => {
    await setUserCap(org, 'revoked', '0', ['--overrun-policy', 'reject']);
    const grant = await runCliJson<{ grant_id: string; status: string }>(
      [
        'credits',
        'grant',
        '--app-id',
        org.app_id,
        '--external-user-id',
        'revoked',
        '--amount',
        decimal(costNano * 5n),
      ],
      env,
    );
    expect((await send('revoked')).status).toBe(200);
    const revoked = await runCliJson<{ grant_id: string; status: string }>(
      ['credits', 'revoke', '--grant-id', grant.grant_id],
      env,
    );
    expect(revoked).toMatchObject({ grant_id: grant.grant_id, status: 'revoked' });
    expect((await send('revoked')).status).toBe(403);
  });

  /**
   * Eight requests of a user with a 0 cap (reject) and a grant (`gw credits grant` with
   * `grantFlags()`, asked for just before) worth five and a half of them: once five are
   * admitted on the grant (three are refused), `meanwhile` runs while the vendor holds them;
   * then they are answered, and the five are paid by the grant to the nano-unit.
   */
  async function grantFundingFiveInFlight(
    user: string,
    grantFlags: () => readonly string[],
    meanwhile: (grantId: string) => Promise<void>,
  ) {
    const slow = {
      ...body(user),
      messages: [{ role: 'user', content: `count to eight front:hold=${user}` }],
    };
    const slowCost =
      BigInt(countInputTokens(chatCompletionTexts(slow))) * 150n + BigInt(OUTPUT_TOKENS) * 600n;
    await setUserCap(org, user, '0', ['--overrun-policy', 'reject']);
    const grant = await runCliJson<{ grant_id: string }>(
      [
        'credits',
        'grant',
        '--app-id',
        org.app_id,
        '--external-user-id',
        user,
        '--amount',
        decimal(slowCost * 5n + slowCost / 2n),
        ...grantFlags(),
      ],
      env,
    );
    const { rows } = await db.query<{ id: string }>(
      'SELECT id FROM product_users WHERE app_id = $1 AND external_user_id = $2',
      [org.app_id, user],
    );
    const userId = rows[0]!.id;
    const spendKey = `${prefix}:{o:${org.org_id}}:pu:${userId}:spend:${monthlyPeriod(new Date(), null).key}`;
    const creditsKey = `${prefix}:{o:${org.org_id}}:pu:${userId}:credits:USD`;
    const inFlight = Array.from({ length: 8 }, () =>
      postJson<ErrorBody>(`${behindFront.url}/v1/chat/completions`, slow, bearer(org.api_key)),
    );
    await eventually(async () =>
      (await redis.hget(spendKey, 'reserved')) === String(slowCost * 5n) ? true : undefined,
    );
    await meanwhile(grant.grant_id);
    front.release(user);
    const responses = await Promise.all(inFlight);
    expect(responses.map((response) => response.status).sort()).toEqual([
      200, 200, 200, 200, 200, 403, 403, 403,
    ]);
    const paid = await eventually(async () => {
      const { rows: usage } = await db.query<{ count: string; credits: string; spent: string }>(
        `SELECT count(*)::text AS count, COALESCE(sum(credits_cost), 0)::text AS credits,
                COALESCE(sum(sell_cost), 0)::text AS spent
           FROM usage_records WHERE product_user_id = $1`,
        [userId],
      );
      return usage[0]!.count === '5' ? usage[0]! : undefined;
    }, 10_000);
    expect(paid).toEqual({
      count: '5',
      credits: decimal(slowCost * 5n),
      spent: decimal(slowCost * 5n),
    });
    const consumed = await eventually(async () => {
      const { rows: consumptions } = await db.query<{ count: string; total: string }>(
        `SELECT count(*)::text AS count, COALESCE(sum(amount), 0)::text AS total
           FROM credit_consumptions WHERE grant_id = $1`,
        [grant.grant_id],
      );
      return consumptions[0]!.count === '5' ? consumptions[0]!.total : undefined;
    }, 10_000);
    expect(consumed).toBe(decimal(slowCost * 5n));
    return { grantId: grant.grant_id, slowCost, spendKey, creditsKey };
  }

  it('a grant revoked while requests it funds are in flight pays them, and nothing more', async () => {
    const user = 'revoked-in-flight';
    const { grantId, spendKey, creditsKey } = await grantFundingFiveInFlight(
      user,
      () => [],
      async (id) => void (await runCliJson(['credits', 'revoke', '--grant-id', id], env)),
    );
    // The half request left on the grant went with the revoke: nothing is left to spend.
    expect(await redis.hget(creditsKey, `g:${grantId}`)).toBeNull();
    expect(await redis.hget(spendKey, 'reserved')).toBe('0');
    const after = await send(user);
    expect(after.body.error.provider_specific_fields!.error.code).toBe(
      'gw_product_user_allowance_insufficient',
    );
  });

  it('a grant that expires while requests it funds are in flight pays them, and no new one', async () => {
    const user = 'expired-in-flight';
    // Admitted well before the grant expires (4 s after it is asked for), answered after it.
    let expiresAt = new Date();
    const { grantId, slowCost, spendKey, creditsKey } = await grantFundingFiveInFlight(
      user,
      () => {
        expiresAt = new Date(Date.now() + 4_000);
        return ['--expires-at', expiresAt.toISOString()];
      },
      async () => {
        // The five were admitted on the grant's credits while it was live.
        expect(Date.now()).toBeLessThan(expiresAt.getTime());
        await new Promise((resolve) => setTimeout(resolve, expiresAt.getTime() - Date.now() + 200));
      },
    );
    expect(Date.now()).toBeGreaterThan(expiresAt.getTime());
    // The half request left on it is no longer spendable: a new request does not count it.
    expect(await redis.hget(creditsKey, `g:${grantId}`)).toBe(String(slowCost / 2n));
    expect(await redis.hmget(spendKey, 'spent', 'reserved')).toEqual([String(slowCost * 5n), '0']);
    const after = await send(user);
    expect(after.status).toBe(403);
    expect(after.body.error.provider_specific_fields!.error.params).toMatchObject({
      promotional_credit_balance: '0.000000000000',
      available_allowance: '0.000000000000',
    });
  });

  it('gw wallet set and topup change what the wallet can pay', async () => {
    const poor = await seed(env);
    expect(
      await runCliJson(['wallet', 'set', '--org-id', poor.org_id, '--amount', '0.00'], env),
    ).toMatchObject({ balance: '0.000000000000' });
    const refused = await postJson<ErrorBody>(
      `${gateways[0]!.url}/v1/chat/completions`,
      body('w'),
      bearer(poor.api_key),
    );
    expect([refused.status, refused.body.error.code]).toEqual([
      402,
      'gw_reservation_insufficient_balance',
    ]);
    expect(
      await runCliJson(['wallet', 'topup', '--org-id', poor.org_id, '--amount', '0.50'], env),
    ).toMatchObject({ balance: '0.500000000000' });
    const served = await postJson(
      `${gateways[1]!.url}/v1/chat/completions`,
      body('w'),
      bearer(poor.api_key),
    );
    expect(served.status).toBe(200);
    const after = await runCliJson<{ balance: string; reserved: string }>(
      ['wallet', 'show', '--org-id', poor.org_id],
      env,
    );
    expect(after).toEqual({
      org_id: poor.org_id,
      balance: decimal(500_000_000n - costNano),
      reserved: '0.000000000000',
      available: decimal(500_000_000n - costNano),
      currency: 'USD',
    });
  });

  it('never rejects for allowance under track_only', async () => {
    await setUserCap(org, 'tracked', '0', ['--credit-mode', 'track_only']);
    expect((await send('tracked')).status).toBe(200);
  });

  it('rejects a blocked user whatever the balance, until unblocked', async () => {
    await send('blocky');
    await runCliJson(
      ['product-user', 'block', '--app-id', org.app_id, '--external-user-id', 'blocky'],
      env,
    );
    // the CLI's change reaches the gateway by pub/sub: served until it arrives
    const blocked = await firstNot200(() => send('blocky'));
    expect([blocked.status, blocked.body.error.code]).toEqual([403, 'gw_product_user_blocked']);
    await runCliJson(
      ['product-user', 'unblock', '--app-id', org.app_id, '--external-user-id', 'blocky'],
      env,
    );
    const unblocked = await firstChangedAnswer(
      () => send('blocky'),
      (answer) => answer.body.error?.code === 'gw_product_user_blocked',
    );
    expect(unblocked.status).toBe(200);
  });

  it('requires attribution on a connection that says so', async () => {
    const strict = await seed(env);
    await runCliJson(
      [
        'cap',
        'set',
        '--scope',
        'app_connection',
        '--app-connection-id',
        strict.app_connection_id,
        '--amount',
        '100',
        '--requires-product-user',
        'true',
      ],
      env,
    );
    const response = await postJson<ErrorBody>(
      `${gateways[1]!.url}/v1/chat/completions`,
      { model: 'vendor_b/gpt-4o-mini', messages: [{ role: 'user', content: 'anonymous' }] },
      bearer(strict.api_key),
    );
    expect([response.status, response.body.error.code]).toEqual([
      400,
      'gw_product_user_credits_required',
    ]);
  });
});

describe('cached cap rules', () => {
  it('are read again when the pub/sub connection comes back, so a missed change does not linger', async () => {
    const org = await seed(env);
    await runCliJson(
      ['cap', 'set', '--scope', 'org', '--org-id', org.org_id, '--amount', '1000'],
      env,
    );
    const send = () =>
      postJson<ErrorBody>(
        `${gateways[0]!.url}/v1/chat/completions`,
        body('reload-user'),
        bearer(org.api_key),
      );
    expect((await send()).status).toBe(200);
    // The cap drops behind the gateways' backs: no invalidation is published.
    await db.query(
      "UPDATE cap_rules SET amount = 0.000000001 WHERE scope = 'org' AND org_id = $1",
      [org.org_id],
    );
    expect((await send()).status).toBe(200); // the cached rule still applies
    // Every subscriber of these gateways is disconnected (only theirs: other files' gateways
    // share this Redis; on a cluster, wherever each one is): they reconnect and drop what they
    // cached.
    let killed = 0;
    for (const node of masters(redis)) {
      const clients = (await node.call('CLIENT', 'LIST', 'TYPE', 'pubsub')) as string;
      const ours = clients
        .split('\n')
        .filter((line) => line.includes(` name=${prefix}:invalidations `))
        .map((line) => /(?:^| )id=(\d+)/.exec(line)![1]!);
      for (const id of ours) await node.call('CLIENT', 'KILL', 'ID', id);
      killed += ours.length;
    }
    expect(killed).toBe(gateways.length + 1); // and the instance behind the front
    const refused = await eventually(async () => {
      const response = await send();
      return response.status === 200 ? undefined : response;
    }, 10_000);
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('gw_cap_exceeded');
  });
});
