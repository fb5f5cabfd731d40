// Password change, "sign out everywhere" and the operator's reset, through HTTP on two gateway
// instances sharing the real Redis and Postgres: every other session ends on both at once,
// a wrong current password changes nothing and is throttled with the sign-in's count, a user
// ends only their own sessions, and the CLI takes passwords from stdin or a prompt.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256Hex } from '../src/ids.js';
import { createRedisKeys } from '../src/redis/keys.js';
import { isolatedContext } from './support/context.js';
import { DashboardClient, TEST_PASSWORD, uniqueEmail } from './support/dashboard.js';
import {
  runCli,
  runCliJson,
  runCliProcess,
  startGateway,
  type CliInput,
  type GatewayProcess,
} from './support/processes.js';
import type { ErrorBody } from './support/http.js';

const { env, db, redis, prefix } = isolatedContext('passwords');
const keys = createRedisKeys(prefix);
let gatewayA: GatewayProcess;
let gatewayB: GatewayProcess;

const NEW_PASSWORD = 'a brand new passphrase, long enough';

beforeAll(async () => {
  [gatewayA, gatewayB] = await Promise.all([startGateway(env), startGateway(env)]);
});

afterAll(async () => {
  await Promise.all([gatewayA?.stop(), gatewayB?.stop()]);
});

/** A new dashboard user (password TEST_PASSWORD, piped on stdin); its id. */
async function newUser(label: string): Promise<{ email: string; userId: string }> {
  const email = uniqueEmail(label);
  const created = await runCli(
    ['admin', 'create-user', '--email', email, '--password-stdin'],
    env,
    {
      stdin: `${TEST_PASSWORD}\n`,
    },
  );
  expect(created).toMatchObject({ code: 0, stderr: '' });
  return { email, userId: (JSON.parse(created.stdout) as { id: string }).id };
}

/** A browser signed in on `gateway` (origin its own). */
async function signIn(
  gateway: GatewayProcess,
  email: string,
  password = TEST_PASSWORD,
): Promise<DashboardClient> {
  const client = new DashboardClient(gateway.url, `https://127.0.0.1:${gateway.port}`);
  const answer = await client.login(email, password);
  expect(answer.status).toBe(200);
  return client;
}

/** A browser presenting `cookie` (an old session's, say) on `gateway`. */
function presenting(gateway: GatewayProcess, cookie: string | undefined): DashboardClient {
  const client = new DashboardClient(gateway.url, `https://127.0.0.1:${gateway.port}`);
  client.cookie = cookie;
  return client;
}

const sessionStatus = async (client: DashboardClient): Promise<number> =>
  (await client.get('/auth/session')).status;

const handleOf = (client: DashboardClient): string => sha256Hex(client.cookie!.split('=')[1]!);

async function storedUser(
  userId: string,
): Promise<{ password_hash: string; session_epoch: number }> {
  const { rows } = await db.query<{ password_hash: string; session_epoch: number }>(
    'SELECT password_hash, session_epoch FROM dashboard_users WHERE id = $1',
    [userId],
  );
  return rows[0]!;
}

const indexed = (userId: string): Promise<string[]> =>
  redis.zrange(keys.userSessions(userId), 0, -1);

function changePassword(
  client: DashboardClient,
  current: string,
  next: string,
): ReturnType<DashboardClient['post']> {
  return client.post('/auth/password', { current_password: current, new_password: next });
}

describe('POST /auth/password', () => {
  it('changes the password, ends every other session on both instances at once, and renews this one', async () => {
    const { email, userId } = await newUser('change');
    const changer = await signIn(gatewayA, email);
    const otherOnA = await signIn(gatewayA, email);
    const otherOnB = await signIn(gatewayB, email);
    const oldCookie = changer.cookie;
    const before = await storedUser(userId);
    expect((await indexed(userId)).sort()).toEqual(
      [changer, otherOnA, otherOnB].map(handleOf).sort(),
    );

    const changed = await changePassword(changer, TEST_PASSWORD, NEW_PASSWORD);
    expect(changed.status).toBe(200);
    expect(changed.body).toEqual({ password_changed: true, other_sessions_ended: 2 });
    expect(changed.headers.get('cache-control')).toBe('no-store');
    // a new session id in the cookie; the old id ends with the others
    expect(changer.cookie).toMatch(/^__Host-gw_session=[0-9A-Za-z]{43}$/);
    expect(changer.cookie).not.toBe(oldCookie);

    for (const client of [otherOnA, otherOnB, presenting(gatewayB, oldCookie)]) {
      const refused = await client.get<ErrorBody>('/auth/session');
      expect(refused.status).toBe(401);
      expect(refused.body.error.code).toBe('gw_session_required');
    }
    // this browser goes on, on either instance, with its new session's CSRF token
    expect(await sessionStatus(changer)).toBe(200);
    expect(await sessionStatus(presenting(gatewayB, changer.cookie))).toBe(200);
    const csrf = await changer.get<{ csrf_token: string }>('/auth/csrf');
    changer.csrfToken = csrf.body.csrf_token;
    expect((await changer.post('/dashboard/api/orgs/none/apps', { name: 'x' })).status).toBe(404);

    const after = await storedUser(userId);
    expect(after.password_hash).not.toBe(before.password_hash);
    expect(after.session_epoch).toBe(before.session_epoch + 1);
    // Redis holds the new session only: the others' keys are gone, and so are their entries
    expect(await indexed(userId)).toEqual([handleOf(changer)]);
    for (const client of [otherOnA, otherOnB]) {
      expect(await redis.exists(keys.session(handleOf(client)))).toBe(0);
    }
    // the old password no longer signs in; the new one does
    const old = new DashboardClient(gatewayB.url, `https://127.0.0.1:${gatewayB.port}`);
    expect((await old.login(email, TEST_PASSWORD)).status).toBe(401);
    await signIn(gatewayB, email, NEW_PASSWORD);
  });

  it('refuses a wrong current password and changes nothing', async () => {
    const { email, userId } = await newUser('wrong-current');
    const client = await signIn(gatewayA, email);
    const other = await signIn(gatewayB, email);
    const before = await storedUser(userId);
    const refused = await changePassword(client, 'not my password at all', NEW_PASSWORD);
    expect(refused.status).toBe(401);
    expect((refused.body as ErrorBody).error).toEqual({
      code: 'gw_invalid_credentials',
      message: 'current_password: wrong password',
    });
    expect(await storedUser(userId)).toEqual(before);
    expect(await sessionStatus(client)).toBe(200);
    expect(await sessionStatus(other)).toBe(200);
    expect((await indexed(userId)).length).toBe(2);
  });

  it('refuses a new password the rules refuse, in the rule’s words, without counting a guess', async () => {
    const { email, userId } = await newUser('rules');
    const client = await signIn(gatewayA, email);
    const before = await storedUser(userId);
    const cases: Array<[string, string]> = [
      ['short', 'new_password: must be at least 12 characters'],
      // 300 characters: within the body's bound, over the rule
      ['x'.repeat(300), 'new_password: must be at most 256 characters'],
      // 600 UTF-16 units: over the body's bound, told the same rule
      ['y'.repeat(600), 'new_password: must be at most 256 characters'],
    ];
    // more refusals than the account's 5 failures: none is counted
    for (const [password, message] of [...cases, ...cases]) {
      const refused = await changePassword(client, TEST_PASSWORD, password);
      expect(refused.status).toBe(400);
      expect((refused.body as ErrorBody).error).toEqual({ code: 'gw_invalid_request', message });
    }
    expect(await storedUser(userId)).toEqual(before);
    expect((await changePassword(client, TEST_PASSWORD, NEW_PASSWORD)).status).toBe(200);
  });

  it('throttles guesses at the current password with the sign-in count of the account', async () => {
    const { email, userId } = await newUser('guesses');
    const client = await signIn(gatewayA, email);
    const before = await storedUser(userId);
    const statuses: number[] = [];
    for (let guess = 0; guess < 5; guess += 1) {
      statuses.push((await changePassword(client, `guess number ${guess}!`, NEW_PASSWORD)).status);
    }
    expect(statuses).toEqual(Array(5).fill(401));
    // the right current password too: held back, unchecked, until the window ends
    const blocked = await changePassword(client, TEST_PASSWORD, NEW_PASSWORD);
    expect(blocked.status).toBe(429);
    expect((blocked.body as ErrorBody).error.code).toBe('gw_too_many_attempts');
    expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThan(0);
    // one count with the sign-in page: it is held back as well
    const signInPage = new DashboardClient(gatewayB.url, `https://127.0.0.1:${gatewayB.port}`);
    expect((await signInPage.login(email, TEST_PASSWORD)).status).toBe(429);
    expect(await storedUser(userId)).toEqual(before);
    expect(await sessionStatus(client)).toBe(200);
  });

  it('needs the CSRF token and an allowed Origin, like every dashboard write', async () => {
    const { email, userId } = await newUser('csrf');
    const client = await signIn(gatewayA, email);
    const before = await storedUser(userId);
    const body = { current_password: TEST_PASSWORD, new_password: NEW_PASSWORD };
    const noToken = await client.post<ErrorBody>('/auth/password', body, { csrf: false });
    expect(noToken.body.error.code).toBe('gw_csrf_token_invalid');
    const foreign = await client.post<ErrorBody>('/auth/password', body, {
      origin: 'https://evil.example',
    });
    expect(foreign.body.error.code).toBe('gw_origin_not_allowed');
    const signedOut = presenting(gatewayA, undefined);
    expect((await signedOut.post<ErrorBody>('/auth/password', body)).status).toBe(401);
    expect(await storedUser(userId)).toEqual(before);
  });
});

describe('POST /auth/logout-everywhere', () => {
  it('ends every session of the user on both instances, this one included, and clears the cookie', async () => {
    const { email, userId } = await newUser('everywhere');
    const here = await signIn(gatewayA, email);
    const there = await signIn(gatewayB, email);
    const cookie = here.cookie;
    const answer = await here.post('/auth/logout-everywhere');
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ signed_out: true, sessions_ended: 2 });
    expect(answer.headers.get('set-cookie')).toMatch(/^__Host-gw_session=; .*Max-Age=0/);
    expect(await sessionStatus(presenting(gatewayB, cookie))).toBe(401);
    expect(await sessionStatus(there)).toBe(401);
    expect(await redis.exists(keys.userSessions(userId))).toBe(0);
    // the password is untouched: signing in again works
    expect(await sessionStatus(await signIn(gatewayB, email))).toBe(200);
  });

  it('ends a session Redis does not list under the user: the epoch refuses it', async () => {
    // as a sign-in whose session was made from the hash read before the cut, or whose entry
    // in the user's list was lost
    const { email, userId } = await newUser('unlisted');
    const unlisted = await signIn(gatewayA, email);
    await redis.zrem(keys.userSessions(userId), handleOf(unlisted));
    const other = await signIn(gatewayB, email);
    expect((await other.post('/auth/logout-everywhere')).body).toMatchObject({ sessions_ended: 1 });
    expect(await redis.exists(keys.session(handleOf(unlisted)))).toBe(1);
    const refused = await unlisted.get<ErrorBody>('/auth/session');
    expect(refused.status).toBe(401);
    expect(refused.body.error.message).toContain('was ended');
    // …and the refusal deletes it
    expect(await redis.exists(keys.session(handleOf(unlisted)))).toBe(0);
  });

  it("ends only the caller's own sessions: another user's stay, whatever is sent", async () => {
    const mallory = await newUser('mallory');
    const alice = await newUser('alice');
    const aliceBrowser = await signIn(gatewayA, alice.email);
    const malloryBrowser = await signIn(gatewayB, mallory.email);
    const aliceBefore = await storedUser(alice.userId);
    // a body naming another user is not read (the route takes none)
    const ended = await malloryBrowser.post('/auth/logout-everywhere', {
      user_id: alice.userId,
    });
    expect(ended.status).toBe(200);
    expect(await sessionStatus(malloryBrowser)).toBe(401);
    // nor does a password change reach past its own account
    const malloryAgain = await signIn(gatewayB, mallory.email);
    const changed = await malloryAgain.post('/auth/password', {
      current_password: TEST_PASSWORD,
      new_password: NEW_PASSWORD,
      user_id: alice.userId,
    });
    expect(changed.status).toBe(400);
    expect((await changePassword(malloryAgain, TEST_PASSWORD, NEW_PASSWORD)).status).toBe(200);
    expect(await sessionStatus(aliceBrowser)).toBe(200);
    expect(await storedUser(alice.userId)).toEqual(aliceBefore);
    expect(await indexed(alice.userId)).toEqual([handleOf(aliceBrowser)]);
  });
});

describe('the session list in Redis', () => {
  it('prunes expired entries when a session is made', async () => {
    const { email, userId } = await newUser('prune');
    await redis.zadd(keys.userSessions(userId), 1, 'a-long-gone-session');
    const client = await signIn(gatewayA, email);
    expect(await indexed(userId)).toEqual([handleOf(client)]);
    const ttlMs = await redis.pttl(keys.userSessions(userId));
    // it lives as long as the newest session can (DASHBOARD_SESSION_MAX_MS, 12 h)
    expect(ttlMs).toBeGreaterThan(11 * 3_600_000);
    expect(ttlMs).toBeLessThanOrEqual(12 * 3_600_000);
  });
});

describe('gw admin set-password and end-sessions', () => {
  const setPassword = (email: string, input: CliInput, extra: string[] = []) =>
    runCli(['admin', 'set-password', '--email', email, ...extra], env, input);

  it('sets the password from stdin and ends every session of the user', async () => {
    const { email } = await newUser('reset');
    const browsers = [await signIn(gatewayA, email), await signIn(gatewayB, email)];
    const bystander = await newUser('bystander');
    const bystanderBrowser = await signIn(gatewayA, bystander.email);
    const result = await setPassword(email, { stdin: `${NEW_PASSWORD}\n` }, ['--password-stdin']);
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual({
      password_reset: true,
      email: email.toLowerCase(),
      sessions_ended: 2,
    });
    expect(result.stdout + result.stderr).not.toContain(NEW_PASSWORD);
    for (const browser of browsers) expect(await sessionStatus(browser)).toBe(401);
    expect(await sessionStatus(bystanderBrowser)).toBe(200);
    await signIn(gatewayB, email, NEW_PASSWORD);
    const old = new DashboardClient(gatewayA.url, `https://127.0.0.1:${gatewayA.port}`);
    expect((await old.login(email, TEST_PASSWORD)).status).toBe(401);
  });

  it('lets a user held back by failed sign-ins sign in with the new password at once, as a reset by e-mail does (decision 447)', async () => {
    const { email } = await newUser('locked-out');
    const browser = new DashboardClient(gatewayA.url, `https://127.0.0.1:${gatewayA.port}`);
    for (let attempt = 0; attempt < 5; attempt += 1) {
      expect((await browser.login(email, 'not the password!')).status).toBe(401);
    }
    expect((await browser.login(email, TEST_PASSWORD)).status).toBe(429);
    const result = await setPassword(email, { stdin: `${NEW_PASSWORD}\n` }, ['--password-stdin']);
    expect(result.code).toBe(0);
    expect(await redis.exists(keys.loginFailures('account-clients', sha256Hex(email)))).toBe(0);
    expect((await browser.login(email, NEW_PASSWORD)).status).toBe(200);
  });

  it('asks twice at a terminal, and changes nothing when the two differ', async () => {
    const { email, userId } = await newUser('prompt');
    const browser = await signIn(gatewayA, email);
    const before = await storedUser(userId);
    const mismatch = await setPassword(email, { typed: [NEW_PASSWORD, `${NEW_PASSWORD}!`] });
    expect(mismatch.code).toBe(2);
    expect(mismatch.stderr).toContain('the two passwords typed differ');
    expect(await storedUser(userId)).toEqual(before);
    expect(await sessionStatus(browser)).toBe(200);
    const typed = await setPassword(email, { typed: [NEW_PASSWORD, NEW_PASSWORD] });
    expect(typed.code).toBe(0);
    expect(typed.stderr).toBe('Password: Password again: ');
    expect(await sessionStatus(browser)).toBe(401);
    await signIn(gatewayA, email, NEW_PASSWORD);
  });

  it('refuses a password as an argument, a missing or bad one and an unknown user, changing nothing', async () => {
    const { email, userId } = await newUser('refusals');
    const browser = await signIn(gatewayA, email);
    const before = await storedUser(userId);
    const refusals: Array<[Promise<{ code: number; stderr: string }>, string, string]> = [
      [
        setPassword(email, {}, ['--password', NEW_PASSWORD]),
        'gw_invalid_request',
        'set-password takes no --password',
      ],
      [setPassword(email, {}), 'gw_invalid_request', 'reads the password from standard input'],
      [
        setPassword(email, { stdin: 'short\n' }, ['--password-stdin']),
        'gw_invalid_request',
        'password: must be at least 12 characters',
      ],
      [
        setPassword(email, { stdin: `${NEW_PASSWORD}\nsecond line\n` }, ['--password-stdin']),
        'gw_invalid_request',
        'one line',
      ],
      [
        setPassword(uniqueEmail('nobody'), { stdin: `${NEW_PASSWORD}\n` }, ['--password-stdin']),
        'gw_not_found',
        'no dashboard user with the e-mail',
      ],
    ];
    for (const [running, code, message] of refusals) {
      const result = await running;
      expect(result.code).toBe(2);
      const { error } = JSON.parse(result.stderr) as ErrorBody;
      expect(error.code).toBe(code);
      expect(error.message).toContain(message);
      expect(result.stderr).not.toContain(NEW_PASSWORD);
    }
    expect(await storedUser(userId)).toEqual(before);
    expect(await sessionStatus(browser)).toBe(200);
  });

  it('end-sessions signs the user out everywhere and keeps the password', async () => {
    const { email, userId } = await newUser('end-sessions');
    const browsers = [await signIn(gatewayA, email), await signIn(gatewayB, email)];
    const before = await storedUser(userId);
    const ended = await runCliJson<{ sessions_ended: number }>(
      ['admin', 'end-sessions', '--email', email],
      env,
    );
    expect(ended).toEqual({ signed_out: true, sessions_ended: 2 });
    for (const browser of browsers) expect(await sessionStatus(browser)).toBe(401);
    expect((await storedUser(userId)).password_hash).toBe(before.password_hash);
    await signIn(gatewayB, email);
  });
});

describe('gw admin create-user passwords', () => {
  it('reads --password-stdin in the real binary, and warns about --password on stderr', async () => {
    const piped = uniqueEmail('piped');
    const fromStdin = await runCliProcess(
      ['admin', 'create-user', '--email', piped, '--password-stdin'],
      env,
      `${TEST_PASSWORD}\n`,
    );
    expect(fromStdin).toMatchObject({ code: 0, stderr: '' });
    await signIn(gatewayA, piped);

    const argued = uniqueEmail('argued');
    const fromArgument = await runCli(
      ['admin', 'create-user', '--email', argued, '--password', TEST_PASSWORD],
      env,
    );
    expect(fromArgument.code).toBe(0);
    expect(fromArgument.stderr).toContain('warning: --password is visible to other users');
    await signIn(gatewayA, argued);

    const both = await runCli(
      [
        'admin',
        'create-user',
        '--email',
        uniqueEmail('both'),
        '--password',
        'x',
        '--password-stdin',
      ],
      env,
      { stdin: `${TEST_PASSWORD}\n` },
    );
    expect(both.code).toBe(2);
    expect(both.stderr).toContain('--password or --password-stdin, not both');
  });
});

describe('password length answers', () => {
  it('states the rule (256 characters) for a password over the body’s bound too', async () => {
    const client = new DashboardClient(gatewayA.url, `https://127.0.0.1:${gatewayA.port}`);
    const answer = await client.login(uniqueEmail('long'), 'z'.repeat(513));
    expect(answer.status).toBe(400);
    expect((answer.body as unknown as ErrorBody).error.message).toBe(
      'password: must be at most 256 characters',
    );
  });
});
