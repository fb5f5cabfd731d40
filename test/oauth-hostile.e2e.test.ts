// OAuth under attack (decision 366), on a real gateway with the real Redis and Postgres: a
// hostile app that registers a client only to use the gateway's address as a redirector
// (RFC 9700 section 4.11.2), and deleting a client that fails half-way, which must leave no
// working token behind a deleted client; and names made to break out of the consent page
// (its one inline script allowed by hash, decision 425).
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isolatedContext } from './support/context.js';
import { connectionRevocationRefused, whileRefusing } from './support/refusing-trigger.js';
import {
  createMember,
  signInTo,
  TEST_PASSWORD,
  uniqueEmail,
  type DashboardClient,
} from './support/dashboard.js';
import { bearer, postJson, type ErrorBody } from './support/http.js';
import {
  authorizeQuery,
  connectAndExchange,
  createOAuthClient,
  getAuthorize,
  pkcePair,
  readErrorPageLink,
  type RegisteredClient,
} from './support/oauth.js';
import { runCliJson, seed, startGateway, type GatewayProcess } from './support/processes.js';
import { eventually } from './support/services.js';

const { env, db } = isolatedContext('oauth-hostile', { ownDatabase: true });
let gateway: GatewayProcess;
let maker: DashboardClient;
let makerApp: string;
/** A hostile app's client: its one redirect URI is a phishing page. */
let phishing: RegisteredClient;

const PHISHING = 'https://phish.example/login';

const chat = {
  model: 'vendor_b/gpt-4o-mini',
  messages: [{ role: 'user', content: 'hello' }],
  max_tokens: 5,
};

async function newUser(label: string): Promise<{ browser: DashboardClient; orgId: string }> {
  const email = uniqueEmail(label);
  const user = await runCliJson<{ personal_org_id: string }>(
    ['admin', 'create-user', '--email', email, '--password-stdin'],
    env,
    { stdin: TEST_PASSWORD },
  );
  await runCliJson(['wallet', 'topup', '--org-id', user.personal_org_id, '--amount', '5.00'], env);
  return { browser: await signInTo(gateway, email), orgId: user.personal_org_id };
}

beforeAll(async () => {
  gateway = await startGateway(env);
  const org = await seed(env, ['--name', 'Hostile Maker', '--wallet', '1.00']);
  makerApp = org.app_id;
  const makerEmail = uniqueEmail('hostile-maker');
  await createMember(env, makerEmail, org.org_id, 'admin');
  maker = await signInTo(gateway, makerEmail);
  phishing = await createOAuthClient(env, makerApp, [PHISHING], { public: true });
});

afterAll(async () => {
  await gateway?.stop();
});

describe('an authorization request with a bad parameter', () => {
  const bad = () => ({
    clientId: phishing.client_id,
    redirectUri: PHISHING,
    state: 'lure',
    // no code_challenge: PKCE missing
  });

  it('is never redirected on its own: the gateway shows the problem and a link back', async () => {
    const signedIn = await newUser('hostile-victim');
    for (const cookie of [undefined, signedIn.browser.cookie]) {
      const answer = await getAuthorize(gateway.url, authorizeQuery(bad()), {
        ...(cookie !== undefined && { cookie }),
      });
      expect(answer.status).toBe(400);
      expect(answer.location).toBeNull();
      expect(answer.headers.get('content-type')).toMatch(/^text\/html/);
      expect(answer.headers.get('x-frame-options')).toBe('DENY');
      expect(answer.text).toContain('code_challenge is required');
      expect(answer.text).toContain('phish.example');
      // The user may still go back to the app, by their own click: the error response, as
      // RFC 6749 section 4.1.2.1 would have sent it, with the state and the issuer.
      const link = new URL(readErrorPageLink(answer.text)!);
      expect(`${link.origin}${link.pathname}`).toBe(PHISHING);
      expect(link.searchParams.get('error')).toBe('invalid_request');
      expect(link.searchParams.get('state')).toBe('lure');
      expect(link.searchParams.get('iss')).toBe(`https://127.0.0.1:${gateway.port}`);
    }
  });

  it("puts no text of the request's own on the page: a repeated unknown parameter is not named", async () => {
    const lure = 'Your account is locked, call 555-0100';
    const query = `${authorizeQuery({ ...bad(), challenge: pkcePair().challenge })}&${new URLSearchParams(
      [
        [lure, '1'],
        [lure, '2'],
      ],
    ).toString()}`;
    const answer = await getAuthorize(gateway.url, query);
    expect(answer.status).toBe(400);
    expect(answer.text).toContain('each parameter must be sent once');
    expect(answer.text).not.toContain('555-0100');
    // A parameter the request is made of is named.
    const twice = await getAuthorize(
      gateway.url,
      `${authorizeQuery({ ...bad(), challenge: pkcePair().challenge })}&state=again`,
    );
    expect(twice.text).toContain('state must be sent once');
  });

  it('answers JSON to a caller that does not ask for a page, and names no location', async () => {
    for (const request of [
      bad(),
      { ...bad(), challenge: pkcePair().challenge, responseType: 'token' },
    ]) {
      const answer = await getAuthorize(gateway.url, authorizeQuery(request), {
        accept: 'application/json',
      });
      expect(answer.status).toBe(400);
      expect(answer.location).toBeNull();
      const body = JSON.parse(answer.text) as ErrorBody;
      expect(body.error.code).toBe('gw_invalid_request');
    }
  });
});

describe('deleting an OAuth client', () => {
  it('is all or nothing: a failure half-way leaves the client and every token working, and a retry finishes', async () => {
    const client = await createOAuthClient(env, makerApp, ['https://app.example/cb'], {
      name: 'Doomed app',
    });
    const [first, second] = [await newUser('delete-a'), await newUser('delete-b')];
    const tokens = [
      await connectAndExchange(gateway.url, first.browser, client),
      await connectAndExchange(gateway.url, second.browser, client),
    ];
    // The second connection's revocation fails (as a dropped database connection would).
    const failing = tokens[1]!.app_connection_id;
    await whileRefusing(db, connectionRevocationRefused(failing), async () => {
      const failed = await maker.request(
        'DELETE',
        `/dashboard/api/oauth-clients/${client.client_id}`,
      );
      expect(failed.status).toBe(500);
      const { rows } = await db.query<{ status: string }>(
        'SELECT status FROM oauth_clients WHERE id = $1',
        [client.client_id],
      );
      expect(rows).toEqual([{ status: 'active' }]);
      for (const token of tokens) {
        expect(
          (await postJson(`${gateway.url}/v1/chat/completions`, chat, bearer(token.access_token)))
            .status,
        ).toBe(200);
      }
    });
    const deleted = await maker.request<{ status: string }>(
      'DELETE',
      `/dashboard/api/oauth-clients/${client.client_id}`,
    );
    expect(deleted.status).toBe(200);
    expect(deleted.body.status).toBe('deleted');
    const { rows } = await db.query<{ status: string }>(
      'SELECT status FROM app_connections WHERE id = ANY($1) ORDER BY id',
      [tokens.map((token) => token.app_connection_id)],
    );
    expect(rows).toEqual([{ status: 'revoked' }, { status: 'revoked' }]);
    for (const token of tokens) {
      const refused = await eventually(async () => {
        const answer = await postJson<ErrorBody>(
          `${gateway.url}/v1/chat/completions`,
          chat,
          bearer(token.access_token),
        );
        return answer.status === 200 ? undefined : answer;
      });
      expect(refused.status).toBe(401);
      expect(refused.body.error.code).toBe('gw_key_inactive');
    }
  });
});

describe('the consent page with names chosen to break out of it', () => {
  it('shows an app and an organization named with markup and quotes as text, under a policy allowing its one script only', async () => {
    const appName = `</title><script>alert(1)</script>"' onmouseover="x`;
    const orgName = `"><img src=x onerror=alert(2)> '</option></select><script>alert(3)</script>`;
    const renamed = await maker.request('PATCH', `/dashboard/api/apps/${makerApp}`, {
      name: appName,
    });
    expect(renamed.status).toBe(200);
    const callback = 'http://127.0.0.1:9/names';
    const named = await createOAuthClient(env, makerApp, [callback], { public: true });
    const email = uniqueEmail('hostile-names');
    const paying = await seed(env, ['--name', orgName, '--wallet', '1.00']);
    await createMember(env, email, paying.org_id, 'admin');
    const user = await signInTo(gateway, email);
    // connected before in that organization with a cap: its option carries it
    await connectAndExchange(gateway.url, user, named, { orgId: paying.org_id, capAmount: '2' });
    const page = await getAuthorize(
      gateway.url,
      authorizeQuery({
        clientId: named.client_id,
        redirectUri: callback,
        state: `"><script>alert(4)</script>`,
        challenge: pkcePair().challenge,
      }),
      { cookie: user.cookie! },
    );
    expect(page.status).toBe(200);
    // one script element, the page's own; no attribute or element of the names' making
    const scripts = [...page.text.matchAll(/<script>([\s\S]*?)<\/script>/g)].map((m) => m[1]!);
    expect(scripts).toHaveLength(1);
    expect(page.text).not.toMatch(/<img|['"]\s*onmouseover=|<\/title><script>/);
    expect(page.text.match(/<\/select>|<\/option>|<\/title>/g)).toEqual([
      '</title>',
      '</option>', // the user's personal organization
      '</option>',
      '</select>',
    ]);
    expect(page.text).toContain(
      '&quot;&gt;&lt;img src=x onerror=alert(2)&gt; &#39;&lt;/option&gt;&lt;/select&gt;',
    );
    expect(page.text).toContain(
      `data-cap="2" data-cap-note="Filled in with the cap of its newest connection to &quot;&gt;&lt;img`,
    );
    const policy = page.headers.get('content-security-policy') ?? '';
    const hash = createHash('sha256').update(scripts[0]!).digest('base64');
    expect(policy.split('; ').filter((part) => part.startsWith('script-src'))).toEqual([
      `script-src 'sha256-${hash}'`,
    ]);
    expect(policy).toContain("default-src 'none'");
  });
});
