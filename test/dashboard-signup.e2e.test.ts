// Self-service sign-up (POST /auth/signup): off unless the operator switches it on
// (DASHBOARD_SIGNUP), then a new user with their own personal organization, signed in at once,
// and throttled per client address — on the real Redis and Postgres.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isolatedContext } from './support/context.js';
import { DashboardClient, TEST_PASSWORD, uniqueEmail } from './support/dashboard.js';
import { postJson, type ErrorBody } from './support/http.js';
import { startGateway, type GatewayProcess } from './support/processes.js';
import { deletePrefix } from './support/services.js';

const { env, db, redis, prefix } = isolatedContext('dash-signup');
let closed: GatewayProcess;
let open: GatewayProcess;

interface SignedIn {
  user: { id: string; email: string; personal_org_id: string };
  orgs: { id: string; name: string; role: string }[];
}

const client = (gateway: GatewayProcess) =>
  new DashboardClient(gateway.url, `https://127.0.0.1:${gateway.port}`);

/** The Origin a browser on the gateway's own dashboard sends. */
const ownOrigin = (gateway: GatewayProcess) => ({ origin: `https://127.0.0.1:${gateway.port}` });

/** Forgets this file's sign-up counts, so a test starts with the address's full allowance. */
const resetThrottle = () => deletePrefix(redis, `${prefix}:signup-attempts`);

beforeAll(async () => {
  [closed, open] = await Promise.all([
    startGateway(env),
    startGateway({ ...env, DASHBOARD_SIGNUP: 'true' }),
  ]);
});

afterAll(async () => {
  await Promise.all([closed?.stop(), open?.stop()]);
});

describe('sign-up switched off (the default)', () => {
  it('answers 403 gw_signup_disabled and makes no account', async () => {
    const email = uniqueEmail('closed');
    const answer = await postJson<ErrorBody>(
      `${closed.url}/auth/signup`,
      {
        email,
        password: TEST_PASSWORD,
      },
      ownOrigin(closed),
    );
    expect(answer.status).toBe(403);
    expect(answer.body.error.code).toBe('gw_signup_disabled');
    expect(answer.headers.get('set-cookie')).toBeNull();
    const { rowCount } = await db.query('SELECT 1 FROM dashboard_users WHERE email = $1', [email]);
    expect(rowCount).toBe(0);
    // whatever the body: a malformed one is not told more than that sign-up is off
    const malformed = await postJson<ErrorBody>(
      `${closed.url}/auth/signup`,
      { email },
      ownOrigin(closed),
    );
    expect(malformed.status).toBe(403);
    expect(malformed.body.error.code).toBe('gw_signup_disabled');
  });
});

describe('sign-up switched on', () => {
  it('makes the user and a personal organization they own (with a wallet), and signs them in', async () => {
    await resetThrottle();
    const email = uniqueEmail('Newcomer');
    const browser = client(open);
    const answer = await browser.post<SignedIn>(
      '/auth/signup',
      { email, password: TEST_PASSWORD },
      { csrf: false },
    );
    expect(answer.status).toBe(201);
    expect(answer.body).toEqual({
      user: {
        id: expect.stringMatching(/^usr_/),
        email: email.toLowerCase(),
        personal_org_id: expect.stringMatching(/^org_/),
        // a sign-up proves no address where gw sends no e-mail (decision 370)
        email_verified: false,
      },
      orgs: [{ id: answer.body.user.personal_org_id, name: expect.any(String), role: 'owner' }],
      // a new account has no password reset to review (decision 513)
      review_after_reset: null,
    });
    expect(answer.headers.get('set-cookie')).toMatch(
      /^__Host-gw_session=[0-9A-Za-z]{43}; .*HttpOnly.*SameSite=Lax.*Secure/,
    );
    const session = await browser.get<SignedIn>('/auth/session');
    expect(session.status).toBe(200);
    expect(session.body.user.id).toBe(answer.body.user.id);
    const wallet = await db.query('SELECT 1 FROM wallets WHERE org_id = $1', [
      answer.body.user.personal_org_id,
    ]);
    expect(wallet.rowCount).toBe(1);
    const { rows } = await db.query<{ password_hash: string }>(
      'SELECT password_hash FROM dashboard_users WHERE id = $1',
      [answer.body.user.id],
    );
    expect(rows[0]!.password_hash).toMatch(/^scrypt\$/);
    // The account signs in like any other.
    expect((await client(open).login(email, TEST_PASSWORD)).status).toBe(200);
  });

  it('refuses an e-mail that has an account (409), a short password and a bad e-mail (400), making nothing', async () => {
    await resetThrottle();
    const email = uniqueEmail('taken');
    const first = await postJson(
      `${open.url}/auth/signup`,
      { email, password: TEST_PASSWORD },
      ownOrigin(open),
    );
    expect(first.status).toBe(201);
    const cases: [Record<string, unknown>, number, string, RegExp][] = [
      [{ email: email.toUpperCase(), password: TEST_PASSWORD }, 409, 'gw_conflict', /exists/],
      [
        { email: uniqueEmail('short'), password: 'short' },
        400,
        'gw_invalid_request',
        /^password: /,
      ],
      [{ email: 'not-an-email', password: TEST_PASSWORD }, 400, 'gw_invalid_request', /^email: /],
      [
        { email: uniqueEmail('extra'), password: TEST_PASSWORD, role: 'owner' },
        400,
        'gw_invalid_request',
        /role/,
      ],
    ];
    for (const [body, status, code, message] of cases) {
      const answer = await postJson<ErrorBody>(`${open.url}/auth/signup`, body, ownOrigin(open));
      expect(answer.status, JSON.stringify(body)).toBe(status);
      expect(answer.body.error.code).toBe(code);
      expect(answer.body.error.message).toMatch(message);
      expect(answer.headers.get('set-cookie')).toBeNull();
    }
    const { rows } = await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM dashboard_users WHERE email = ANY($1)`,
      [[email, ...cases.map(([body]) => String(body.email).toLowerCase())]],
    );
    expect(rows[0]!.n).toBe(1);
  });

  it('refuses a sign-up from a foreign Origin, or with none (login CSRF), making nothing', async () => {
    await resetThrottle();
    for (const headers of [{ origin: 'https://evil.example' }, {}] as Record<string, string>[]) {
      const email = uniqueEmail('csrf');
      const answer = await postJson<ErrorBody>(
        `${open.url}/auth/signup`,
        { email, password: TEST_PASSWORD },
        headers,
      );
      expect(answer.status, JSON.stringify(headers)).toBe(403);
      expect(answer.body.error.code).toBe('gw_origin_not_allowed');
      expect(answer.headers.get('set-cookie')).toBeNull();
      const { rowCount } = await db.query('SELECT 1 FROM dashboard_users WHERE email = $1', [
        email,
      ]);
      expect(rowCount).toBe(0);
    }
  });

  it('counts password lengths in characters, not UTF-16 units: 12 to 256 emoji', async () => {
    await resetThrottle();
    const cases: [string, number, RegExp | undefined][] = [
      ['😀'.repeat(6), 400, /^password: must be at least 12 characters$/],
      ['😀'.repeat(11), 400, /^password: must be at least 12 characters$/],
      ['😀'.repeat(12), 201, undefined],
      ['😀'.repeat(256), 201, undefined],
      ['😀'.repeat(257), 400, /^password: must be at most 256 characters$/],
    ];
    for (const [password, status, message] of cases) {
      const email = uniqueEmail('emoji');
      const answer = await postJson<ErrorBody>(
        `${open.url}/auth/signup`,
        { email, password },
        ownOrigin(open),
      );
      expect(answer.status, `${[...password].length} emoji`).toBe(status);
      if (message) expect(answer.body.error.message).toMatch(message);
      if (status === 201) {
        // and the same password signs in (the sign-in body takes it too)
        expect((await client(open).login(email, password)).status).toBe(200);
      }
    }
  });

  it('ends the session the browser presented: a planted session id is worthless', async () => {
    await resetThrottle();
    const first = client(open);
    await first.post('/auth/signup', { email: uniqueEmail('first'), password: TEST_PASSWORD });
    const planted = first.cookie!;
    const browser = client(open);
    browser.cookie = planted;
    const answer = await browser.post<SignedIn>('/auth/signup', {
      email: uniqueEmail('second'),
      password: TEST_PASSWORD,
    });
    expect(answer.status).toBe(201);
    expect(browser.cookie).not.toBe(planted);
    const stale = client(open);
    stale.cookie = planted;
    expect((await stale.get('/auth/session')).status).toBe(401);
  });

  it('counts every attempt per client address: past 10 in the window, 429 with Retry-After and no account', async () => {
    await resetThrottle();
    const made: string[] = [];
    for (let attempt = 0; attempt < 10; attempt += 1) {
      const email = uniqueEmail(`burst${attempt}`);
      // Successful sign-ups and refused ones count alike.
      const password = attempt % 2 === 0 ? TEST_PASSWORD : 'short';
      const answer = await postJson(
        `${open.url}/auth/signup`,
        { email, password },
        ownOrigin(open),
      );
      expect(answer.status).toBe(attempt % 2 === 0 ? 201 : 400);
      if (answer.status === 201) made.push(email);
    }
    const email = uniqueEmail('eleventh');
    const blocked = await postJson<ErrorBody>(
      `${open.url}/auth/signup`,
      {
        email,
        password: TEST_PASSWORD,
      },
      ownOrigin(open),
    );
    expect(blocked.status).toBe(429);
    expect(blocked.body.error.code).toBe('gw_too_many_attempts');
    const retryAfter = Number(blocked.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(15 * 60);
    const { rowCount } = await db.query('SELECT 1 FROM dashboard_users WHERE email = $1', [email]);
    expect(rowCount).toBe(0);
    expect(made).toHaveLength(5);
    // Sign-in is counted apart: these sign-ups do not lock anyone out of signing in.
    expect((await client(open).login(made[0]!, TEST_PASSWORD)).status).toBe(200);
  });

  it('counts attempts whose body is refused too: malformed bodies use up the allowance', async () => {
    await resetThrottle();
    const malformed: unknown[] = [
      { email: uniqueEmail('nopassword') },
      { email: uniqueEmail('extra'), password: TEST_PASSWORD, role: 'owner' },
      { email: 42, password: TEST_PASSWORD },
      '{"email": "not json',
      { email: uniqueEmail('long'), password: 'x'.repeat(600) },
    ];
    for (let attempt = 0; attempt < 10; attempt += 1) {
      const answer = await postJson<ErrorBody>(
        `${open.url}/auth/signup`,
        malformed[attempt % malformed.length],
        ownOrigin(open),
      );
      expect(answer.status, `attempt ${attempt}`).toBe(400);
    }
    const email = uniqueEmail('after-malformed');
    const blocked = await postJson<ErrorBody>(
      `${open.url}/auth/signup`,
      { email, password: TEST_PASSWORD },
      ownOrigin(open),
    );
    expect(blocked.status).toBe(429);
    expect(blocked.body.error.code).toBe('gw_too_many_attempts');
    // a malformed attempt past the limit is told so as well
    const again = await postJson<ErrorBody>(
      `${open.url}/auth/signup`,
      malformed[0],
      ownOrigin(open),
    );
    expect(again.status).toBe(429);
    expect(Number(again.headers.get('retry-after'))).toBeGreaterThan(0);
    const { rowCount } = await db.query('SELECT 1 FROM dashboard_users WHERE email = $1', [email]);
    expect(rowCount).toBe(0);
  });
});
