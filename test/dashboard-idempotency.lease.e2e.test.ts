// An Idempotency-Key's first request holds its key by a lease (decision 388), through started
// gateways on the real Redis and Postgres: a gateway killed (SIGKILL) mid-create leaves the key
// to the retry once the lease lapses — it runs once and makes one app, rather than "still being
// processed" for 10 minutes; a live request renews its lease past its first term and a second
// request with its key is refused meanwhile, never run; a gateway paused (SIGSTOP) past its
// lease while a retry took the key over commits nothing and writes no answer when it resumes;
// a key whose request committed its change and has not answered is reported at once as
// committed, never run again; a create refused inside its own transaction whose key was never
// released committed nothing, so its retry runs (decision 393). Creates are held mid-handler by
// a lock on the apps table (the file's own database).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestFingerprint } from '../src/idempotency/store.js';
import { isolatedContext } from './support/context.js';
import {
  createMember,
  onGateway,
  signInTo,
  uniqueEmail,
  type DashboardAnswer,
  type DashboardClient,
  newIdempotencyKey,
  withIdempotencyKey,
} from './support/dashboard.js';
import {
  seed,
  startGateway,
  startGatewayProcess,
  type GatewayProcess,
  type SeededOrg,
} from './support/processes.js';
import { eventually } from './support/services.js';
import type { ErrorBody } from './support/http.js';

const { env: context, db } = isolatedContext('idem-lease', { ownDatabase: true });
/**
 * A lease of 3 s (renewed every 750 ms) rather than the default 10 s: the tests wait out a few.
 * A live request's lease lapses only if none of its renewals in 3 s went through.
 */
const LEASE_MS = 3_000;
const env = { ...context, IDEMPOTENCY_KEY_LEASE_MS: String(LEASE_MS) };
let gateway: GatewayProcess;
let tenant: SeededOrg;
let admin: DashboardClient;
let adminUserId: string;

interface App {
  id: string;
  name: string;
}

const appsPath = () => `/dashboard/api/orgs/${tenant.org_id}/apps`;
/** Long enough for a held or paused create's statements to outlive its lease without timing out. */
const PATIENT_DATABASE = { DATABASE_TIMEOUT_MS: '60000' };
/** How long a test waits for a lease to lapse or be renewed: a few terms, on a loaded machine. */
const LEASE_WAIT_MS = 6 * LEASE_MS;

async function appsNamed(name: string): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    'SELECT id FROM apps WHERE org_id = $1 AND name = $2',
    [tenant.org_id, name],
  );
  return rows.map((row) => row.id);
}

/** Holds every app insert (a create mid-handler) until the returned function is called. */
async function holdAppInserts(): Promise<() => Promise<void>> {
  const client = await db.connect();
  await client.query('BEGIN');
  await client.query('LOCK TABLE apps IN SHARE MODE');
  return async () => {
    await client.query('ROLLBACK');
    client.release();
  };
}

/** Resolves with the backend of a statement (its text `LIKE` this) once it waits on a lock. */
function waitingOnLock(statement: string): Promise<number> {
  return eventually(async () => {
    const { rows } = await db.query<{ pid: number }>(
      `SELECT pid FROM pg_stat_activity
        WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE $1`,
      [statement],
    );
    return rows[0]?.pid;
  }, LEASE_WAIT_MS);
}

/** Resolves once a create is waiting on the held apps table: inside its handler's transaction. */
const createWaiting = (): Promise<number> => waitingOnLock('INSERT INTO apps %');

interface KeyRow {
  state: string;
  claim_id: string | null;
  took_effect: boolean;
  lease_expires_at: string;
  /** What is left of the lease by Postgres's clock, in ms. */
  lease_left_ms: number;
}

async function keyRow(key: string): Promise<KeyRow> {
  const { rows } = await db.query<KeyRow>(
    `SELECT state, claim_id, took_effect, lease_expires_at::text,
            (extract(epoch FROM lease_expires_at - now()) * 1000)::float8 AS lease_left_ms
       FROM idempotency_keys WHERE org_id = $1 AND key = $2`,
    [tenant.org_id, key],
  );
  return rows[0]!;
}

/** Resolves once Postgres's clock is past `moment` (a lease's end as Postgres wrote it). */
function postgresPast(moment: string): Promise<true> {
  return eventually(
    async () => {
      const { rows } = await db.query<{ past: boolean }>('SELECT now() > $1::timestamptz AS past', [
        moment,
      ]);
      return rows[0]!.past ? true : undefined;
    },
    LEASE_WAIT_MS,
    200,
  );
}

const stillRunning = (answer: DashboardAnswer<unknown>): boolean =>
  answer.status === 409 &&
  (answer.body as ErrorBody).error.message.includes('still being processed');

beforeAll(async () => {
  gateway = await startGateway({ ...env, ...PATIENT_DATABASE });
  tenant = await seed(env);
  const email = uniqueEmail('idem-lease-admin');
  adminUserId = (await createMember(env, email, tenant.org_id, 'admin')).id;
  admin = await signInTo(gateway, email);
});

afterAll(async () => {
  await gateway?.stop();
});

describe('a key whose gateway died mid-create', () => {
  it('is the retry\'s once its lease lapses: "still being processed" until then, then run once, one app', async () => {
    const key = newIdempotencyKey();
    const name = `killed ${key.slice(-6)}`;
    const doomed = await startGatewayProcess(env);
    const release = await holdAppInserts();
    try {
      const lost = onGateway(admin, doomed)
        .post(appsPath(), { name }, withIdempotencyKey(key))
        .catch(() => 'no answer');
      await createWaiting();
      expect((await keyRow(key)).state).toBe('running');
      await doomed.stop('SIGKILL');
      expect(await lost).toBe('no answer');
    } finally {
      await release();
    }
    const refused: DashboardAnswer<unknown>[] = [];
    const served = await eventually(
      async () => {
        const answer = await admin.post<App>(appsPath(), { name }, withIdempotencyKey(key));
        if (!stillRunning(answer)) return answer;
        refused.push(answer);
        return undefined;
      },
      LEASE_WAIT_MS,
      250,
    );
    expect(served.status).toBe(201);
    expect(served.headers.get('idempotent-replayed')).toBeNull();
    expect(served.body.name).toBe(name);
    expect(await appsNamed(name)).toEqual([served.body.id]);
    // Until the lease lapsed the retry was told to retry, never run.
    for (const answer of refused) {
      expect((answer.body as ErrorBody).error.code).toBe('gw_conflict');
      expect(answer.headers.get('retry-after')).toBe('1');
    }
    const again = await admin.post<App>(appsPath(), { name }, withIdempotencyKey(key));
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(served.body);
    expect(await appsNamed(name)).toEqual([served.body.id]);
  }, 120_000);
});

describe('two live requests with one key', () => {
  it('one runs, renewing its lease past its first term; the other is 409 gw_conflict, never run', async () => {
    const key = newIdempotencyKey();
    const name = `live ${key.slice(-6)}`;
    const release = await holdAppInserts();
    const first = admin.post<App>(appsPath(), { name }, withIdempotencyKey(key));
    try {
      await createWaiting();
      const claimed = await keyRow(key);
      // The gateway's IDEMPOTENCY_KEY_LEASE_MS, not the default 10 s.
      expect(claimed.lease_left_ms).toBeLessThanOrEqual(LEASE_MS);
      // By Postgres's clock, past the end of the lease it claimed with: it was renewed.
      await postgresPast(claimed.lease_expires_at);
      const renewed = await keyRow(key);
      expect(renewed.claim_id).toBe(claimed.claim_id);
      expect(renewed.lease_expires_at > claimed.lease_expires_at).toBe(true);
      const second = await admin.post<ErrorBody>(appsPath(), { name }, withIdempotencyKey(key));
      expect(second.status).toBe(409);
      expect(second.body.error.code).toBe('gw_conflict');
      expect(second.body.error.message).toContain('still being processed');
      expect(second.headers.get('retry-after')).toBe('1');
    } finally {
      await release();
    }
    const answered = await first;
    expect(answered.status).toBe(201);
    expect(await appsNamed(name)).toEqual([answered.body.id]);
    expect(await keyRow(key)).toMatchObject({ state: 'done', took_effect: true });
  }, 120_000);

  it('sent at once, eight of them make one app: the others are refused or replayed', async () => {
    const key = newIdempotencyKey();
    const name = `raced ${key.slice(-6)}`;
    const answers = await Promise.all(
      Array.from({ length: 8 }, () =>
        admin.post<App>(appsPath(), { name }, withIdempotencyKey(key)),
      ),
    );
    const made = answers.filter(
      (answer) => answer.status === 201 && answer.headers.get('idempotent-replayed') === null,
    );
    expect(made).toHaveLength(1);
    for (const answer of answers) {
      if (answer.status === 201) expect(answer.body).toEqual(made[0]!.body);
      else expect((answer.body as unknown as ErrorBody).error.code).toBe('gw_conflict');
    }
    expect(await appsNamed(name)).toEqual([made[0]!.body.id]);
  });
});

describe('a request that outlives its lease', () => {
  it('paused while a retry took its key over, commits nothing and writes no answer when it resumes', async () => {
    const key = newIdempotencyKey();
    const name = `paused ${key.slice(-6)}`;
    const paused = await startGatewayProcess({ ...env, ...PATIENT_DATABASE });
    try {
      const release = await holdAppInserts();
      const late = onGateway(admin, paused).post<ErrorBody>(
        appsPath(),
        { name },
        withIdempotencyKey(key),
      );
      try {
        await createWaiting();
        paused.child.kill('SIGSTOP');
        await postgresPast((await keyRow(key)).lease_expires_at);
      } finally {
        // The paused gateway's insert goes through in Postgres; its transaction waits for it.
        await release();
      }
      const retry = await admin.post<App>(appsPath(), { name }, withIdempotencyKey(key));
      expect(retry.status).toBe(201);
      expect(retry.headers.get('idempotent-replayed')).toBeNull();
      paused.child.kill('SIGCONT');
      const lateAnswer = await late;
      expect(lateAnswer.status).toBe(409);
      expect(lateAnswer.body.error.code).toBe('gw_conflict');
      expect(lateAnswer.body.error.message).toContain('a retry with the key took it over');
      expect(lateAnswer.headers.get('retry-after')).toBe('1');
      expect(await appsNamed(name)).toEqual([retry.body.id]);
      // The key keeps the retry's answer: sent again, it is replayed.
      const again = await onGateway(admin, paused).post<App>(
        appsPath(),
        { name },
        withIdempotencyKey(key),
      );
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(again.body).toEqual(retry.body);
    } finally {
      paused.child.kill('SIGCONT');
      await paused.stop();
    }
  }, 120_000);
});

describe('a create that broke before anything of it committed', () => {
  it('leaves its key free: the dashboard, keeping its key after a 503, sends it again and it runs once', async () => {
    const key = newIdempotencyKey();
    const name = `timed out ${key.slice(-6)}`;
    // Its insert waits on the held apps table past this gateway's statement bound: 503.
    const impatient = await startGatewayProcess({ ...env, DATABASE_TIMEOUT_MS: '1000' });
    try {
      const release = await holdAppInserts();
      let broke: DashboardAnswer<ErrorBody>;
      try {
        broke = await onGateway(admin, impatient).post<ErrorBody>(
          appsPath(),
          { name },
          withIdempotencyKey(key),
        );
      } finally {
        await release();
      }
      expect(broke.status).toBe(503);
      expect(broke.body.error.code).toBe('gw_unavailable');
      expect(await appsNamed(name)).toEqual([]);
      const retry = await admin.post<App>(appsPath(), { name }, withIdempotencyKey(key));
      expect(retry.status).toBe(201);
      expect(retry.headers.get('idempotent-replayed')).toBeNull();
      expect(await appsNamed(name)).toEqual([retry.body.id]);
      const again = await admin.post<App>(appsPath(), { name }, withIdempotencyKey(key));
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(again.body).toEqual(retry.body);
    } finally {
      await impatient.stop();
    }
  }, 120_000);
});

describe('a create refused inside its own transaction (the app deleted meanwhile), its key never released', () => {
  it('committed nothing: once its lease lapses the retry runs again and is refused as the first was, not told it committed', async () => {
    const key = newIdempotencyKey();
    const app = await admin.post<App>(appsPath(), { name: `deleted meanwhile ${key.slice(-6)}` });
    expect(app.status).toBe(201);
    const connectionsPath = `/dashboard/api/apps/${app.body.id}/connections`;
    const deleting = await db.connect();
    const keyHeld = await db.connect();
    let refused: DashboardAnswer<ErrorBody>;
    try {
      // The app's deletion, in progress: the create waits for it inside its transaction.
      await deleting.query('BEGIN');
      await deleting.query(`UPDATE apps SET status = 'deleted', deleted_at = now() WHERE id = $1`, [
        app.body.id,
      ]);
      const creating = admin.post<ErrorBody>(
        connectionsPath,
        { name: 'refused' },
        withIdempotencyKey(key),
      );
      await waitingOnLock('SELECT status FROM apps %');
      // Its key's row may be updated (renewed, marked) but not deleted: the release waits...
      await keyHeld.query('BEGIN');
      await keyHeld.query(
        'SELECT 1 FROM idempotency_keys WHERE org_id = $1 AND key = $2 FOR KEY SHARE',
        [tenant.org_id, key],
      );
      await deleting.query('COMMIT');
      // ... and its connection to Postgres is lost: the key stays as the refusal left it.
      const releasing = await waitingOnLock('DELETE FROM idempotency_keys %');
      await db.query('SELECT pg_terminate_backend($1)', [releasing]);
      refused = await creating;
    } finally {
      await deleting.query('ROLLBACK').catch(() => undefined);
      deleting.release();
      await keyHeld.query('ROLLBACK');
      keyHeld.release();
    }
    expect(refused.status).toBe(503);
    expect(refused.body.error.code).toBe('gw_unavailable');
    expect(await keyRow(key)).toMatchObject({ state: 'running', took_effect: false });
    const retried = await eventually(
      async () => {
        const answer = await admin.post<ErrorBody>(
          connectionsPath,
          { name: 'refused' },
          withIdempotencyKey(key),
        );
        return stillRunning(answer) ? undefined : answer;
      },
      LEASE_WAIT_MS,
      250,
    );
    expect(retried.status).toBe(409);
    expect(retried.body.error.code).toBe('gw_conflict');
    expect(retried.body.error.message).toBe('the app is deleted: it cannot get new connections');
    const { rows } = await db.query('SELECT id FROM app_connections WHERE app_id = $1', [
      app.body.id,
    ]);
    expect(rows).toEqual([]);
  }, 120_000);
});

describe('a key whose lease lapsed', () => {
  /**
   * What a leased request leaves when its gateway dies: a running row claimed a lease ago, its
   * lease over (a lease that ends before its claim is the mark of a previous version's claim).
   */
  async function leftRunning(key: string, name: string, tookEffect: boolean): Promise<void> {
    await db.query(
      `INSERT INTO idempotency_keys (org_id, caller, route, key, request_hash, state, expires_at,
                                     claim_id, created_at, lease_expires_at, took_effect)
       VALUES ($1, $2, 'POST /dashboard/api/orgs/{org_id}/apps', $3, $4, 'running',
               now() + interval '1 day', 'dead-claim', now() - interval '11 seconds',
               now() - interval '1 second', $5)`,
      [
        tenant.org_id,
        `user:${adminUserId}`,
        key,
        requestFingerprint(appsPath(), { name }),
        tookEffect,
      ],
    );
  }

  it('after its request committed its change is reported at once as committed and unanswered, never run again; an answer recorded late is replayed', async () => {
    const key = newIdempotencyKey();
    const name = `committed ${key.slice(-6)}`;
    await leftRunning(key, name, true);
    const answer = await admin.post<ErrorBody>(appsPath(), { name }, withIdempotencyKey(key));
    expect(answer.status).toBe(409);
    expect(answer.body.error.code).toBe('gw_conflict');
    expect(answer.headers.get('retry-after')).toBeNull();
    // True whether its gateway died or only lost Postgres for a while (decision 393).
    expect(answer.body.error.message).toMatch(
      /started at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ and committed its change, but has not recorded its answer: the gateway serving it stopped, or cannot reach Postgres\. Check what it made before using a new key \(should that gateway still record the answer, this key replays it\)$/,
    );
    expect(await appsNamed(name)).toEqual([]);
    expect(await keyRow(key)).toMatchObject({ state: 'running', claim_id: 'dead-claim' });
    // Its gateway reaches Postgres again and records its answer (its claim still holds the key).
    const made = { id: 'app_made_by_the_first', name };
    await db.query(
      `UPDATE idempotency_keys SET state = 'done', status = 201, answer_clear = $3
        WHERE org_id = $1 AND key = $2 AND claim_id = 'dead-claim'`,
      [tenant.org_id, key, JSON.stringify(made)],
    );
    const replayed = await admin.post<App>(appsPath(), { name }, withIdempotencyKey(key));
    expect(replayed.status).toBe(201);
    expect(replayed.headers.get('idempotent-replayed')).toBe('true');
    expect(replayed.body).toEqual(made);
  });

  it('while its request, having committed, still renews it is "still being processed", said committed, with Retry-After', async () => {
    const key = newIdempotencyKey();
    const name = `committed, running ${key.slice(-6)}`;
    await leftRunning(key, name, true);
    await db.query(
      `UPDATE idempotency_keys SET lease_expires_at = now() + interval '10 seconds'
        WHERE org_id = $1 AND key = $2`,
      [tenant.org_id, key],
    );
    const answer = await admin.post<ErrorBody>(appsPath(), { name }, withIdempotencyKey(key));
    expect(answer.status).toBe(409);
    expect(answer.body.error.code).toBe('gw_conflict');
    expect(answer.headers.get('retry-after')).toBe('1');
    expect(answer.body.error.message).toBe(
      'a request with this Idempotency-Key is still being processed: it has committed its change and not yet recorded its answer; retry to get it',
    );
    expect(await appsNamed(name)).toEqual([]);
  });

  it('failed after its request committed its change is reported as committed, not "may or may not"', async () => {
    const key = newIdempotencyKey();
    const name = `committed, failed ${key.slice(-6)}`;
    await leftRunning(key, name, true);
    await db.query(`UPDATE idempotency_keys SET state = 'failed' WHERE org_id = $1 AND key = $2`, [
      tenant.org_id,
      key,
    ]);
    const answer = await admin.post<ErrorBody>(appsPath(), { name }, withIdempotencyKey(key));
    expect(answer.status).toBe(409);
    expect(answer.body.error.code).toBe('gw_conflict');
    expect(answer.headers.get('retry-after')).toBeNull();
    expect(answer.body.error.message).toBe(
      'the first request with this Idempotency-Key committed its change, then failed before answering; check what it made, then use a new key',
    );
    expect(await appsNamed(name)).toEqual([]);
  });

  it('with nothing committed is taken over by the same request only: another body is still refused', async () => {
    const key = newIdempotencyKey();
    const name = `uncommitted ${key.slice(-6)}`;
    await leftRunning(key, name, false);
    const other = await admin.post<ErrorBody>(
      appsPath(),
      { name: `${name}!` },
      withIdempotencyKey(key),
    );
    expect(other.status).toBe(409);
    expect(other.body.error.code).toBe('gw_idempotency_key_reused');
    const answer = await admin.post<App>(appsPath(), { name }, withIdempotencyKey(key));
    expect(answer.status).toBe(201);
    expect(await appsNamed(name)).toEqual([answer.body.id]);
    const row = await keyRow(key);
    expect(row).toMatchObject({ state: 'done', took_effect: true });
    expect(row.claim_id).not.toBe('dead-claim');
  });
});
