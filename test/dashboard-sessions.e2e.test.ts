// Dashboard accounts and sessions: the CLI's first user, sign-in with its cookie, CSRF and
// Origin on writes, roles, throttling, expiry, rotation, sign-out — on a real gateway with the
// real Redis and Postgres. Tenant isolation is generated from the route declarations.
import { createHash } from 'node:crypto';
import { request, type IncomingHttpHeaders } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { routeDeclarations } from '../src/routes/index.js';
import { isolatedContext } from './support/context.js';
import { DashboardClient } from './support/dashboard.js';
import { postJson, type ErrorBody } from './support/http.js';
import {
  runCli,
  runCliJson,
  seed,
  startGateway,
  type GatewayProcess,
  type SeededOrg,
} from './support/processes.js';

const { env, db, redis, prefix } = isolatedContext('dashboard');
let gateway: GatewayProcess;
let origin: string;
let tenantA: SeededOrg;
let tenantB: SeededOrg;

interface CreatedUser {
  id: string;
  email: string;
  personal_org_id: string;
  email_verified: boolean;
  org_ids: string[];
}

const PASSWORD = 'correct horse battery staple';
const unique = (label: string): string =>
  `${label}-${Math.random().toString(36).slice(2, 10)}@example.com`;

function createUser(email: string, extra: string[] = []): Promise<CreatedUser> {
  return runCliJson<CreatedUser>(
    ['admin', 'create-user', '--email', email, '--password-stdin', ...extra],
    env,
    { stdin: PASSWORD },
  );
}

/** Signs in from `localAddress` (another loopback address is another client to gw). */
function loginFrom(
  localAddress: string,
  email: string,
  password: string,
): Promise<{ status: number; headers: IncomingHttpHeaders; body: ErrorBody }> {
  const payload = JSON.stringify({ email, password });
  return new Promise((resolve, reject) => {
    const sent = request(
      `${gateway.url}/auth/login`,
      {
        method: 'POST',
        localAddress,
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(payload),
          origin,
        },
      },
      (answer) => {
        const chunks: Buffer[] = [];
        answer.on('data', (chunk: Buffer) => chunks.push(chunk));
        answer.on('error', reject);
        answer.on('end', () =>
          resolve({
            status: answer.statusCode ?? 0,
            headers: answer.headers,
            body: JSON.parse(Buffer.concat(chunks).toString()) as ErrorBody,
          }),
        );
      },
    );
    sent.on('error', reject);
    sent.end(payload);
  });
}

/** The account's failed sign-ins by client address, and `all` (decision 414). */
const accountFailuresKey = (email: string): string =>
  `${prefix}:login-fail:account-clients:${createHash('sha256').update(email).digest('hex')}`;

async function signedIn(email: string): Promise<DashboardClient> {
  const client = new DashboardClient(gateway.url, origin);
  const answer = await client.login(email, PASSWORD);
  expect(answer.status).toBe(200);
  return client;
}

let adminEmail: string;
let viewerEmail: string;
let outsiderEmail: string;

beforeAll(async () => {
  gateway = await startGateway(env);
  origin = `https://127.0.0.1:${gateway.port}`;
  [tenantA, tenantB] = await Promise.all([seed(env), seed(env)]);
  adminEmail = unique('admin');
  viewerEmail = unique('viewer');
  outsiderEmail = unique('outsider');
  await Promise.all([
    createUser(adminEmail, ['--org-id', tenantA.org_id, '--role', 'admin']),
    createUser(viewerEmail, ['--org-id', tenantA.org_id, '--role', 'viewer']),
    createUser(outsiderEmail, ['--org-id', tenantB.org_id, '--role', 'owner']),
  ]);
});

afterAll(async () => {
  await gateway?.stop();
});

describe('gw admin create-user', () => {
  it('creates a user with a personal organization and wallet they own, and the membership asked for', async () => {
    const email = unique('Founder').toUpperCase();
    const created = await createUser(email, ['--org-id', tenantA.org_id, '--role', 'member']);
    expect(created).toEqual({
      id: expect.stringMatching(/^usr_[0-9A-Za-z]{20}$/),
      email: email.toLowerCase(),
      personal_org_id: expect.stringMatching(/^org_/),
      email_verified: true,
      org_ids: [created.personal_org_id, tenantA.org_id],
    });
    const { rows } = await db.query<{ org_id: string; role: string }>(
      'SELECT org_id, role FROM org_memberships WHERE user_id = $1 ORDER BY role',
      [created.id],
    );
    expect(rows).toEqual([
      { org_id: tenantA.org_id, role: 'member' },
      { org_id: created.personal_org_id, role: 'owner' },
    ]);
    const wallet = await db.query('SELECT 1 FROM wallets WHERE org_id = $1', [
      created.personal_org_id,
    ]);
    expect(wallet.rowCount).toBe(1);
    const { rows: users } = await db.query<{ password_hash: string }>(
      'SELECT password_hash FROM dashboard_users WHERE id = $1',
      [created.id],
    );
    // At the suite's cost (test/support/env.ts; the default's is test/password-cost.test.ts's).
    expect(users[0]!.password_hash).toMatch(/^scrypt\$1024\$8\$1\$/);
    expect(users[0]!.password_hash).not.toContain(PASSWORD);
  });

  it('refuses a second user with the same e-mail, a short password and an unknown role, in the JSON error shape', async () => {
    const email = unique('dup');
    await createUser(email);
    for (const [args, password] of [
      [['--email', email], PASSWORD],
      [['--email', unique('short')], 'short'],
      [['--email', unique('role'), '--org-id', tenantA.org_id, '--role', 'robot'], PASSWORD],
    ] as const) {
      const result = await runCli(['admin', 'create-user', ...args, '--password-stdin'], env, {
        stdin: `${password}\n`,
      });
      expect(result.code).toBe(2);
      expect(JSON.parse(result.stderr).error.message).toMatch(/e-mail exists|at least 12|--role/);
    }
  });
});

describe('sign-in', () => {
  it('sets an HttpOnly, SameSite=Lax, Secure __Host- cookie and keeps only a hash of the id in Redis', async () => {
    const response = await fetch(`${gateway.url}/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin },
      body: JSON.stringify({ email: adminEmail, password: PASSWORD }),
    });
    expect(response.status).toBe(200);
    const body = (await response.json()) as {
      user: { email: string };
      orgs: { id: string; role: string }[];
    };
    expect(body.user.email).toBe(adminEmail);
    expect(body.orgs).toContainEqual({
      id: tenantA.org_id,
      name: expect.any(String),
      role: 'admin',
    });
    const cookie = response.headers.get('set-cookie')!;
    expect(cookie).toMatch(/^__Host-gw_session=[0-9A-Za-z]{43}; /);
    for (const attribute of ['Path=/', 'HttpOnly', 'SameSite=Lax', 'Secure']) {
      expect(cookie.split('; ')).toContain(attribute);
    }
    const id = /^__Host-gw_session=([0-9A-Za-z]{43})/.exec(cookie)![1]!;
    const hash = createHash('sha256').update(id).digest('hex');
    expect(await redis.exists(`${prefix}:session:${hash}`)).toBe(1);
    expect(await redis.exists(`${prefix}:session:${id}`)).toBe(0);
    const ttl = await redis.pttl(`${prefix}:session:${hash}`);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(2 * 3_600_000);
  });

  it('refuses a sign-in from a foreign Origin, or with none, before any password is checked (login CSRF)', async () => {
    const attempts: Array<Record<string, string>> = [
      { origin: 'https://evil.example' },
      { origin: 'null' },
      { origin: `http://127.0.0.1:${gateway.port}` }, // not the gateway's (it is https here)
      {},
    ];
    for (const headers of attempts) {
      const answer = await postJson<ErrorBody>(
        `${gateway.url}/auth/login`,
        { email: adminEmail, password: PASSWORD },
        headers,
      );
      expect(answer.status, JSON.stringify(headers)).toBe(403);
      expect(answer.body.error.code).toBe('gw_origin_not_allowed');
      expect(answer.headers.get('set-cookie')).toBeNull();
    }
    const own = await postJson(
      `${gateway.url}/auth/login`,
      { email: adminEmail, password: PASSWORD },
      { origin },
    );
    expect(own.status).toBe(200);
  });

  it('answers the CSRF token with Cache-Control: no-store', async () => {
    const admin = await signedIn(adminEmail);
    const answer = await admin.get<{ csrf_token: string }>('/auth/csrf');
    expect(answer.status).toBe(200);
    expect(answer.body.csrf_token).toBe(admin.csrfToken);
    expect(answer.headers.get('cache-control')).toBe('no-store');
  });

  it('answers one generic error for a wrong password and for an unknown e-mail', async () => {
    const wrong = await postJson<ErrorBody>(
      `${gateway.url}/auth/login`,
      {
        email: viewerEmail,
        password: 'not the password at all',
      },
      { origin },
    );
    const unknown = await postJson<ErrorBody>(
      `${gateway.url}/auth/login`,
      {
        email: unique('nobody'),
        password: PASSWORD,
      },
      { origin },
    );
    expect(wrong.status).toBe(401);
    expect(unknown.status).toBe(401);
    expect(wrong.body).toEqual({
      error: { code: 'gw_invalid_credentials', message: 'wrong e-mail or password' },
    });
    expect(unknown.body).toEqual(wrong.body);
  });

  it('refuses text Postgres cannot store with a 400 naming the field, on sign-in and on writes', async () => {
    const login = await postJson<ErrorBody>(
      `${gateway.url}/auth/login`,
      {
        email: `a\u0000b@example.com`,
        password: PASSWORD,
      },
      { origin },
    );
    expect(login.status).toBe(400);
    expect(login.body.error).toEqual({
      code: 'gw_invalid_request',
      message: 'email: must not contain a NUL character',
    });
    const admin = await signedIn(adminEmail);
    const member = await admin.post<ErrorBody>(
      `/dashboard/api/orgs/${tenantA.org_id}/invitations`,
      {
        email: 'x\ud800@example.com',
        role: 'viewer',
      },
    );
    expect(member.status).toBe(400);
    expect(member.body.error.message).toMatch(/^email: must not contain a lone surrogate/);
  });

  it('holds back a guessing client after 5 failures, even with the right password, but not the owner elsewhere', async () => {
    // Decision 414: five wrong passwords from anywhere used to block the account for everyone
    // for 15 minutes, its owner included. Now they hold back the client that sent them.
    const email = unique('throttled');
    await createUser(email);
    const guesser = '127.0.0.2';
    for (let attempt = 0; attempt < 5; attempt += 1) {
      expect((await loginFrom(guesser, email, 'wrong password!')).status).toBe(401);
    }
    const blocked = await loginFrom(guesser, email, PASSWORD);
    expect(blocked.status).toBe(429);
    expect(blocked.body.error.code).toBe('gw_too_many_attempts');
    const retryAfter = Number(blocked.headers['retry-after']);
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(15 * 60);
    // the owner, from their own address, signs in
    expect((await loginFrom('127.0.0.1', email, PASSWORD)).status).toBe(200);
    const counts = await redis.hgetall(accountFailuresKey(email));
    expect(counts).toEqual({ all: '6', [guesser]: '6' });
  });

  it('past 20 failures at an account, gives each client one guess: the owner still signs in', async () => {
    const email = unique('besieged');
    await createUser(email);
    // 4 addresses × 5 guesses: the account's ceiling
    for (const last of [3, 4, 5, 6]) {
      for (let attempt = 0; attempt < 5; attempt += 1) {
        expect((await loginFrom(`127.0.0.${last}`, email, 'wrong password!')).status).toBe(401);
      }
    }
    // a new client gets one guess, then waits
    expect((await loginFrom('127.0.0.7', email, 'wrong password!')).status).toBe(401);
    expect((await loginFrom('127.0.0.7', email, PASSWORD)).status).toBe(429);
    // the owner's first attempt goes through
    expect((await loginFrom('127.0.0.8', email, PASSWORD)).status).toBe(200);
    // one that mistyped while the account is besieged waits, as a guesser does
    expect((await loginFrom('127.0.0.9', email, 'a typo, sorry!')).status).toBe(401);
    expect((await loginFrom('127.0.0.9', email, PASSWORD)).status).toBe(429);
  });

  it('counts a sign-in before checking its password: a burst of guesses at once gets 5 checked, not all', async () => {
    const email = unique('burst');
    await createUser(email);
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, attempt) =>
        postJson(
          `${gateway.url}/auth/login`,
          { email, password: `wrong password ${attempt}` },
          { origin },
        ),
      ),
    );
    const statuses = answers.map((answer) => answer.status).sort();
    expect(statuses).toEqual([...Array(5).fill(401), ...Array(15).fill(429)]);
    const blocked = await postJson<ErrorBody>(
      `${gateway.url}/auth/login`,
      { email, password: PASSWORD },
      { origin },
    );
    expect(blocked.status).toBe(429);
  });

  it('does not count a successful sign-in against its address', async () => {
    // 50 failures block an address: 51 successful sign-ins from it are never held back. They
    // go 4 at a time, so both cores hash: an attempt is counted before its password is checked
    // and given back after, so at most 4 are counted at once, below the account's limit of 5
    // (which also counts attempts under way) and far below the address's 50.
    const email = unique('regular');
    await createUser(email);
    const statuses: number[] = [];
    for (let first = 0; first < 51; first += 4) {
      const batch = Array.from({ length: Math.min(4, 51 - first) }, () =>
        postJson(`${gateway.url}/auth/login`, { email, password: PASSWORD }, { origin }),
      );
      for (const answer of await Promise.all(batch)) statuses.push(answer.status);
    }
    expect(statuses).toEqual(Array.from({ length: 51 }, () => 200));
    // 51 password checks (scrypt, by design slow): longer than the default on a loaded machine.
  }, 120_000);

  it('gives a new session id at every sign-in and ends the one the browser presented', async () => {
    const client = await signedIn(viewerEmail);
    const firstCookie = client.cookie!;
    await client.login(viewerEmail, PASSWORD);
    expect(client.cookie).not.toBe(firstCookie);
    const stale = new DashboardClient(gateway.url, origin);
    stale.cookie = firstCookie;
    const answer = await stale.get<ErrorBody>('/auth/session');
    expect(answer.status).toBe(401);
    expect(answer.body.error.code).toBe('gw_session_required');
    expect((await client.get('/auth/session')).status).toBe(200);
  });

  it('ends a session past its absolute lifetime even while it is in use', async () => {
    const client = await signedIn(viewerEmail);
    const id = client.cookie!.split('=')[1]!;
    const key = `${prefix}:session:${createHash('sha256').update(id).digest('hex')}`;
    const stored = JSON.parse((await redis.get(key))!) as { t: number };
    await redis.set(
      key,
      JSON.stringify({ ...stored, t: Date.now() - 13 * 3_600_000 }),
      'PX',
      60_000,
    );
    const answer = await client.get<ErrorBody>('/auth/session');
    expect(answer.status).toBe(401);
    expect(answer.body.error.code).toBe('gw_session_required');
    expect(await redis.exists(key)).toBe(0);
  });
});

describe('dashboard writes', () => {
  it('need the X-CSRF-Token of the session and an allowed Origin', async () => {
    const client = await signedIn(adminEmail);
    const path = `/dashboard/api/orgs/${tenantA.org_id}/apps`;
    const noToken = await client.post<ErrorBody>(path, { name: 'x' }, { csrf: false });
    expect(noToken.status).toBe(403);
    expect(noToken.body.error.code).toBe('gw_csrf_token_invalid');
    const wrongOrigin = await client.post<ErrorBody>(
      path,
      { name: 'x' },
      { origin: 'https://evil.example' },
    );
    expect(wrongOrigin.status).toBe(403);
    // The refusal names the origin it expected, and the one it was sent.
    expect(wrongOrigin.body.error).toEqual({
      code: 'gw_origin_not_allowed',
      message: `dashboard writes must come from the gateway's own origin or one in DASHBOARD_ALLOWED_ORIGINS: expected ${origin}; this request sent Origin https://evil.example`,
    });
    const noOrigin = await client.post<ErrorBody>(path, { name: 'x' }, { origin: null });
    expect(noOrigin.status).toBe(403);
    expect(noOrigin.body.error.code).toBe('gw_origin_not_allowed');
    expect(noOrigin.body.error.message).toMatch(/this request sent no Origin header$/);
    // A plain-HTTP local gateway is the usual cause of an http:// own origin: said so.
    const plain = await client.post<ErrorBody>(
      path,
      { name: 'x' },
      { origin: origin.replace('https:', 'http:') },
    );
    expect(plain.body.error.message).toMatch(
      /\(a plain-HTTP local gateway: start it with DASHBOARD_INSECURE_COOKIES=true\)$/,
    );
    const other = await signedIn(viewerEmail);
    const foreignToken = new DashboardClient(gateway.url, origin);
    foreignToken.cookie = client.cookie;
    foreignToken.csrfToken = other.csrfToken;
    const mismatched = await foreignToken.post<ErrorBody>(path, { name: 'x' });
    expect(mismatched.status).toBe(403);
    expect(mismatched.body.error.code).toBe('gw_csrf_token_invalid');
    const { rowCount } = await db.query("SELECT 1 FROM apps WHERE org_id = $1 AND name = 'x'", [
      tenantA.org_id,
    ]);
    expect(rowCount).toBe(0);
  });

  it('create an app (admin), recorded in the audit log; a viewer may list but not create', async () => {
    const admin = await signedIn(adminEmail);
    const created = await admin.post<{ id: string; name: string; org_id: string }>(
      `/dashboard/api/orgs/${tenantA.org_id}/apps`,
      { name: '  Support bot  ' },
    );
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ name: 'Support bot', org_id: tenantA.org_id });
    const { rows } = await db.query(
      'SELECT action, object_type, object_id, details FROM dashboard_audit_log WHERE object_id = $1',
      [created.body.id],
    );
    expect(rows).toEqual([
      {
        action: 'app.create',
        object_type: 'app',
        object_id: created.body.id,
        details: { name: 'Support bot' },
      },
    ]);

    const viewer = await signedIn(viewerEmail);
    const list = await viewer.get<{ data: { id: string }[]; next_cursor: string | null }>(
      `/dashboard/api/orgs/${tenantA.org_id}/apps`,
    );
    expect(list.status).toBe(200);
    expect(list.body.data.map((app) => app.id)).toContain(created.body.id);
    const refused = await viewer.post<ErrorBody>(`/dashboard/api/orgs/${tenantA.org_id}/apps`, {
      name: 'nope',
    });
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('gw_role_forbidden');
  });

  it('pages lists with a cursor', async () => {
    const admin = await signedIn(adminEmail);
    const org = (
      await runCliJson<CreatedUser>(
        ['admin', 'create-user', '--email', unique('pager'), '--password-stdin'],
        env,
        { stdin: PASSWORD },
      )
    ).personal_org_id;
    await db.query(
      `INSERT INTO org_memberships (org_id, user_id, role)
       SELECT $1, id, 'admin' FROM dashboard_users WHERE email = $2`,
      [org, adminEmail],
    );
    const again = await signedIn(adminEmail);
    for (const name of ['a', 'b', 'c']) {
      expect((await again.post(`/dashboard/api/orgs/${org}/apps`, { name })).status).toBe(201);
    }
    const first = await again.get<{ data: { name: string }[]; next_cursor: string }>(
      `/dashboard/api/orgs/${org}/apps?limit=2`,
    );
    expect(first.body.data.map((app) => app.name)).toEqual(['a', 'b']);
    const second = await again.get<{ data: { name: string }[]; next_cursor: string | null }>(
      `/dashboard/api/orgs/${org}/apps?limit=2&cursor=${first.body.next_cursor}`,
    );
    expect(second.body).toEqual({
      data: [expect.objectContaining({ name: 'c' })],
      next_cursor: null,
    });
    const bad = await again.get<ErrorBody>(`/dashboard/api/orgs/${org}/apps?cursor=%00`);
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('gw_invalid_request');
    expect(admin.cookie).toBeDefined();
  });
});

describe('tenant isolation, for every organization route the gateway declares', () => {
  const memberRoutes = routeDeclarations.filter((route) => route.caller.kind === 'org_member');

  it('covers at least the routes of this test', () => {
    expect(memberRoutes.length).toBeGreaterThanOrEqual(2);
  });

  it('answers 404 gw_not_found for the objects of an organization the caller is not in, and changes nothing', async () => {
    const outsider = await signedIn(outsiderEmail);
    const grant = await runCliJson<{ grant_id: string; product_end_user_id: string }>(
      [
        'credits',
        'grant',
        '--app-id',
        tenantA.app_id,
        '--external-user-id',
        'isolation-probe',
        '--amount',
        '1',
      ],
      env,
    );
    const credential = await runCliJson<{ id: string }>(
      [
        'credentials',
        'add',
        '--org-id',
        tenantA.org_id,
        '--provider',
        'vendor_b',
        '--name',
        'isolation probe',
        '--secret-stdin',
        '--app-connection-id',
        tenantA.app_connection_id,
      ],
      env,
      { stdin: 'mock-ok-isolation-probe' },
    );
    /** An object of tenant A for each table a route can name (a new table needs one here). */
    const foreign: Record<string, string> = {
      organizations: tenantA.org_id,
      apps: tenantA.app_id,
      app_connections: tenantA.app_connection_id,
      api_keys: await anyIdOf('api_keys', tenantA.org_id),
      service_keys: await anyIdOf('service_keys', tenantA.org_id),
      product_users: grant.product_end_user_id,
      credit_grants: grant.grant_id,
      provider_credentials: credential.id,
      oauth_clients: (
        await runCliJson<{ client_id: string }>(
          [
            'oauth-client',
            'create',
            '--app-id',
            tenantA.app_id,
            '--name',
            'isolation probe',
            '--redirect-uri',
            'https://probe.example.com/cb',
          ],
          env,
        )
      ).client_id,
      org_invitations: (
        await (
          await signedIn(adminEmail)
        ).post<{ id: string }>(`/dashboard/api/orgs/${tenantA.org_id}/invitations`, {
          email: unique('isolation-probe'),
          role: 'viewer',
        })
      ).body.id,
    };
    const before = await db.query('SELECT count(*)::int AS n FROM apps WHERE org_id = $1', [
      tenantA.org_id,
    ]);
    const appName = (
      await db.query<{ name: string }>('SELECT name FROM apps WHERE id = $1', [tenantA.app_id])
    ).rows[0]!.name;
    for (const route of memberRoutes) {
      if (route.caller.kind !== 'org_member') continue;
      const target = foreign[route.caller.org.table];
      expect(target, `a foreign ${route.caller.org.table} object for ${route.path}`).toBeDefined();
      const path = route.path
        .replace(`{${route.caller.org.param}}`, target!)
        .replace(/\{\w+\}/g, 'usr_whatever0000000000');
      const answer = await outsider.request<ErrorBody>(
        route.method,
        path,
        route.body ? {} : undefined,
      );
      expect(answer.status, `${route.method} ${route.path}`).toBe(404);
      expect(answer.body.error.code).toBe('gw_not_found');
      // an id that exists nowhere answers the same
      const missing = route.path
        .replace(`{${route.caller.org.param}}`, 'org_doesnotexist00000')
        .replace(/\{\w+\}/g, 'usr_whatever0000000000');
      const absent = await outsider.request<ErrorBody>(
        route.method,
        missing,
        route.body ? {} : undefined,
      );
      expect(absent.status).toBe(404);
      expect(absent.body).toEqual(answer.body);
    }
    const after = await db.query('SELECT count(*)::int AS n FROM apps WHERE org_id = $1', [
      tenantA.org_id,
    ]);
    expect(after.rows).toEqual(before.rows);
    const invitation = await db.query('SELECT status FROM org_invitations WHERE id = $1', [
      foreign.org_invitations,
    ]);
    expect(invitation.rows).toEqual([{ status: 'pending' }]);
    for (const table of ['api_keys', 'service_keys'] as const) {
      const { rows } = await db.query(`SELECT status FROM ${table} WHERE id = $1`, [
        foreign[table],
      ]);
      expect(rows, table).toEqual([{ status: 'active' }]);
    }
    const untouched = await db.query(
      `SELECT g.status AS grant_status, u.status AS user_status
         FROM credit_grants g JOIN product_users u ON u.id = g.product_user_id WHERE g.id = $1`,
      [grant.grant_id],
    );
    expect(untouched.rows).toEqual([{ grant_status: 'active', user_status: 'active' }]);
    const byok = await db.query(
      `SELECT c.status, c.priority, g.app_connection_id FROM provider_credentials c
         LEFT JOIN provider_credential_grants g ON g.credential_id = c.id WHERE c.id = $1`,
      [credential.id],
    );
    expect(byok.rows).toEqual([
      { status: 'active', priority: 1, app_connection_id: tenantA.app_connection_id },
    ]);
    const orgState = await db.query(
      `SELECT (SELECT count(*)::int FROM cap_rules WHERE org_id = $1) AS caps,
              (SELECT status FROM apps WHERE id = $2) AS app_status,
              (SELECT name FROM apps WHERE id = $2) AS app_name,
              (SELECT count(*)::int FROM wallet_transactions WHERE org_id = $1) AS transactions`,
      [tenantA.org_id, tenantA.app_id],
    );
    expect(orgState.rows).toEqual([
      { caps: 0, app_status: 'active', app_name: appName, transactions: 1 },
    ]);
    const client = await db.query('SELECT status FROM oauth_clients WHERE id = $1', [
      foreign.oauth_clients,
    ]);
    expect(client.rows).toEqual([{ status: 'active' }]);
  });
});

/** The id of one row of `table` that belongs to the organization. */
async function anyIdOf(table: 'api_keys' | 'service_keys', orgId: string): Promise<string> {
  const { rows } = await db.query<{ id: string }>(
    `SELECT id FROM ${table} WHERE org_id = $1 ORDER BY created_at LIMIT 1`,
    [orgId],
  );
  return rows[0]!.id;
}

describe('credentials do not cross', () => {
  it('API keys and service keys are never accepted on dashboard routes', async () => {
    for (const key of [tenantA.api_key, tenantA.service_key]) {
      const response = await fetch(`${gateway.url}/dashboard/api/orgs`, {
        headers: { authorization: `Bearer ${key}` },
      });
      expect(response.status).toBe(401);
      expect(((await response.json()) as ErrorBody).error.code).toBe('gw_session_required');
    }
  });

  it('a session cookie is never accepted on inference or service-key routes', async () => {
    const client = await signedIn(adminEmail);
    const chat = await postJson<ErrorBody>(
      `${gateway.url}/v1/chat/completions`,
      { model: 'vendor_b/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] },
      { cookie: client.cookie!, origin, 'x-csrf-token': client.csrfToken! },
    );
    expect(chat.status).toBe(401);
    expect(chat.body.error.code).toBe('gw_malformed_or_missing_key');
    const profile = await fetch(
      `${gateway.url}/product-users/by-external-id?app_id=${tenantA.app_id}&external_user_id=x`,
      { headers: { cookie: client.cookie! } },
    );
    expect(profile.status).toBe(401);
  });
});

describe('/openapi.json', () => {
  it('lists the dashboard routes under the dashboard tag, with the session cookie and their errors', async () => {
    const document = (await (await fetch(`${gateway.url}/openapi.json`)).json()) as {
      paths: Record<
        string,
        Record<
          string,
          {
            tags?: string[];
            security?: unknown;
            responses: Record<string, { description: string }>;
          }
        >
      >;
    };
    const login = document.paths['/auth/login']!.post!;
    expect(login.tags).toEqual(['dashboard']);
    expect(login.responses['429']!.description).toContain('gw_too_many_attempts');
    expect(login.responses['403']!.description).toContain('gw_origin_not_allowed');
    const create = document.paths['/dashboard/api/orgs/{org_id}/apps']!.post!;
    expect(create.security).toEqual([{ dashboardSession: ['admin'] }]);
    expect(create.responses['403']!.description).toContain('gw_csrf_token_invalid');
    expect(create.responses['403']!.description).toContain('gw_role_forbidden');
    expect(create.responses['404']!.description).toContain('gw_not_found');
  });
});

describe('sign-out', () => {
  it('needs the CSRF token, then ends the session everywhere and clears the cookie', async () => {
    const client = await signedIn(viewerEmail);
    const cookie = client.cookie!;
    const refused = await client.post<ErrorBody>('/auth/logout', undefined, { csrf: false });
    expect(refused.status).toBe(403);
    const answer = await client.post('/auth/logout');
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ signed_out: true });
    expect(answer.headers.get('set-cookie')).toMatch(/^__Host-gw_session=; .*Max-Age=0/);
    const reused = new DashboardClient(gateway.url, origin);
    reused.cookie = cookie;
    expect((await reused.get('/dashboard/api/orgs')).status).toBe(401);
  });

  it('lists the signed-in user organizations with their role', async () => {
    const client = await signedIn(adminEmail);
    const orgs = await client.get<{ data: { id: string; role: string }[] }>('/dashboard/api/orgs');
    expect(orgs.status).toBe(200);
    expect(orgs.body.data).toContainEqual({
      id: tenantA.org_id,
      name: expect.any(String),
      role: 'admin',
    });
    expect(orgs.body.data.map((org) => org.id)).not.toContain(tenantB.org_id);
  });
});
