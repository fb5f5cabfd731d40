// The Idempotency-Key store on the real Postgres, where decision 388's leases meet what it left
// open (decision 390): a key an old-version gateway took over during a rolling update (its
// claim leaves the leased columns as an earlier claim wrote them) is that gateway's for the old
// bound, never taken over by a retry while it runs; and a request that broke before anything
// of it committed leaves its key free, like one refused, while one that broke after a commit
// leaves it failed for good, a commit in progress included. Decision 393: a transaction that
// returns a refusal rolls back unmarked, so a key whose request died after refusing is free;
// and what a retry is told matches what the key's row holds, state by state. Decision 395: only
// a refusal is taken for one (a result whose `code` is an inherited name is not).
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { TEST_DATABASE_URL } from '../../test/support/env.js';
import { createApp, createOrganization } from '../admin/provisioning.js';
import { runFenced } from '../db/commit-fence.js';
import { createDbPool, withTransaction } from '../db/pool.js';
import { gwError } from '../errors.js';
import {
  commitFenceOf,
  IdempotencyStore,
  requestFingerprint,
  type HeldKey,
  type IdempotentRequest,
} from './store.js';

const db = createDbPool(TEST_DATABASE_URL, 4);
const store = new IdempotencyStore(db, undefined);
const orgId = await createOrganization(db, `idem-store-${randomBytes(4).toString('hex')}`);

afterAll(async () => {
  await db.query('DELETE FROM organizations WHERE id = $1', [orgId]);
  await db.end();
});

const ROUTE = 'POST /dashboard/api/orgs/{org_id}/apps';

function request(body: unknown = { name: 'an app' }): IdempotentRequest {
  return {
    orgId,
    caller: 'user:usr_store_test',
    route: ROUTE,
    key: `idem-${randomUUID()}`,
    requestHash: requestFingerprint(`/dashboard/api/orgs/${orgId}/apps`, body),
  };
}

interface KeyRow {
  state: string;
  took_effect: boolean;
}

async function keyRow(key: string): Promise<KeyRow | undefined> {
  const { rows } = await db.query<KeyRow>(
    'SELECT state, took_effect FROM idempotency_keys WHERE org_id = $1 AND key = $2',
    [orgId, key],
  );
  return rows[0];
}

/** Claims a new key: the request holds it. */
async function holdKey(idempotent: IdempotentRequest): Promise<HeldKey> {
  const claim = await store.claim(idempotent);
  if (claim.kind !== 'claimed') throw new Error(`expected to claim the key, found ${claim.kind}`);
  return claim.held;
}

/**
 * Ends a held key's lease as if its request had stopped renewing it a lease ago (its gateway
 * died, or cannot reach Postgres): claimed 11 seconds ago, its lease over since 1 second.
 */
async function lapseLease(key: string): Promise<void> {
  await db.query(
    `UPDATE idempotency_keys
        SET created_at = created_at - interval '11 seconds',
            lease_expires_at = lease_expires_at - interval '11 seconds'
      WHERE org_id = $1 AND key = $2`,
    [orgId, key],
  );
}

async function appsNamed(name: string): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    'SELECT id FROM apps WHERE org_id = $1 AND name = $2',
    [orgId, name],
  );
  return rows.map((row) => row.id);
}

/**
 * The claim of a gateway from before leases (migration 068), as that version wrote it: a key
 * past its expiry is taken over with its request, state and times, and nothing else.
 */
async function claimAsPreviousVersion(idempotent: IdempotentRequest): Promise<number> {
  const { rowCount } = await db.query(
    `INSERT INTO idempotency_keys (org_id, caller, route, key, request_hash, state, expires_at)
     VALUES ($1, $5, $2, $3, $4, 'running', now() + interval '1 day')
     ON CONFLICT (org_id, caller, route, key) DO UPDATE
        SET request_hash = EXCLUDED.request_hash, state = 'running', status = NULL,
            answer_sealed = NULL, answer_clear = NULL, created_at = now(),
            expires_at = EXCLUDED.expires_at
      WHERE idempotency_keys.expires_at <= now()`,
    [idempotent.orgId, idempotent.route, idempotent.key, idempotent.requestHash, idempotent.caller],
  );
  return rowCount ?? 0;
}

describe('a key an old-version gateway took over after its expiry (a rolling update)', () => {
  /** A key a leased request claimed, ended as `state` (`tookEffect`), then left a day. */
  async function expiredLeasedKey(
    idempotent: IdempotentRequest,
    state: 'failed' | 'done',
    tookEffect: boolean,
  ): Promise<void> {
    const claim = await store.claim(idempotent);
    expect(claim.kind).toBe('claimed');
    await db.query(
      `UPDATE idempotency_keys
          SET state = $3, took_effect = $4, status = 201, answer_clear = '{}',
              created_at = created_at - interval '25 hours',
              lease_expires_at = lease_expires_at - interval '25 hours',
              expires_at = expires_at - interval '25 hours'
        WHERE org_id = $1 AND key = $2`,
      [orgId, idempotent.key, state, tookEffect],
    );
  }

  it('is "still being processed" for a retry while it runs, never taken over, whatever the earlier claim left', async () => {
    for (const [state, tookEffect] of [
      ['failed', false],
      ['done', true],
    ] as const) {
      const idempotent = request({ name: `${state} a day ago` });
      await expiredLeasedKey(idempotent, state, tookEffect);
      expect(await claimAsPreviousVersion(idempotent)).toBe(1);
      // A retry of the same request reaches a gateway of this version meanwhile; the earlier
      // claim's mark is not this one's.
      expect(await store.claim(idempotent)).toEqual({ kind: 'running', committed: false });
      expect(await keyRow(idempotent.key)).toMatchObject({ state: 'running' });
    }
  });

  it('past the old bound is reported as never answered, its effect unknown, never run again', async () => {
    // Whatever the earlier claim of the key left: its mark (a committed change) is not this
    // claim's, which wrote none.
    for (const [state, tookEffect] of [
      ['failed', false],
      ['done', true],
    ] as const) {
      const idempotent = request({ name: `old claim, long gone, ${state} before` });
      await expiredLeasedKey(idempotent, state, tookEffect);
      expect(await claimAsPreviousVersion(idempotent)).toBe(1);
      await db.query(
        `UPDATE idempotency_keys SET created_at = now() - interval '11 minutes'
          WHERE org_id = $1 AND key = $2`,
        [orgId, idempotent.key],
      );
      expect(await store.claim(idempotent)).toMatchObject({ kind: 'abandoned', effect: 'unknown' });
      // Failed there, the same: the effect of that claim is unknown.
      await db.query(
        `UPDATE idempotency_keys SET state = 'failed' WHERE org_id = $1 AND key = $2`,
        [orgId, idempotent.key],
      );
      expect(await store.claim(idempotent)).toEqual({ kind: 'failed', effect: 'unknown' });
    }
  });
});

describe('a request that broke (an internal error, Postgres unavailable)', () => {
  it('before anything of it committed, leaves its key free: the retry runs', async () => {
    const idempotent = request();
    const claim = await store.claim(idempotent);
    if (claim.kind !== 'claimed') throw new Error(claim.kind);
    // Its transaction failed (a statement timed out): rolled back, its mark with it.
    await expect(
      runFenced(commitFenceOf(store, claim.held), () =>
        withTransaction(db, async (client) => {
          await client.query('SELECT 1');
          throw new Error('canceling statement due to statement timeout');
        }),
      ),
    ).rejects.toThrow('statement timeout');
    await store.release(claim.held);
    expect(await keyRow(idempotent.key)).toBeUndefined();
    expect((await store.claim(idempotent)).kind).toBe('claimed');
  });

  it('after a transaction of it committed, leaves its key failed: never run again', async () => {
    const idempotent = request();
    const claim = await store.claim(idempotent);
    if (claim.kind !== 'claimed') throw new Error(claim.kind);
    await runFenced(commitFenceOf(store, claim.held), () =>
      withTransaction(db, (client) => client.query('SELECT 1')),
    );
    await store.release(claim.held);
    expect(await keyRow(idempotent.key)).toEqual({ state: 'failed', took_effect: true });
    expect(await store.claim(idempotent)).toEqual({ kind: 'failed', effect: 'committed' });
  });

  it('while its commit is in progress, waits for it and leaves the key failed once it committed', async () => {
    const idempotent = request();
    const claim = await store.claim(idempotent);
    if (claim.kind !== 'claimed') throw new Error(claim.kind);
    // A transaction of the request has run its fence (the key's row is locked, marked in it)
    // and not committed yet: a COMMIT whose answer was lost on the way, say.
    const client = await db.connect();
    try {
      await client.query('BEGIN');
      await store.fence(client, claim.held);
      const failing = store.release(claim.held);
      await expect
        .poll(async () => {
          const { rows } = await db.query(
            `SELECT 1 FROM pg_stat_activity
              WHERE datname = current_database() AND wait_event_type = 'Lock'
                AND query LIKE '%idempotency_keys%'`,
          );
          return rows.length;
        })
        .toBe(1);
      await client.query('COMMIT');
      await failing;
    } finally {
      client.release();
    }
    expect(await keyRow(idempotent.key)).toEqual({ state: 'failed', took_effect: true });
  });
});

describe('a key of 255 characters, every printable ASCII one among them', () => {
  it('is claimed, completed and replayed as itself, apart from a key one character shorter', async () => {
    const printable = Array.from({ length: 95 }, (_, i) => String.fromCharCode(0x20 + i)).join('');
    const key = `${printable}${printable}${printable}`.slice(0, 255);
    const idempotent = { ...request(), key };
    const claim = await store.claim(idempotent);
    if (claim.kind !== 'claimed') throw new Error(claim.kind);
    await store.complete(claim.held, { status: 201, body: { id: 'app_1' }, carriesSecret: false });
    expect(await store.claim(idempotent)).toEqual({
      kind: 'replay',
      status: 201,
      body: { id: 'app_1' },
    });
    expect((await store.claim({ ...idempotent, key: key.slice(0, 254) })).kind).toBe('claimed');
  });
});

describe('a create that refuses inside its own transaction (the app deleted meanwhile, a limit reached)', () => {
  const deleted = () => gwError('gw_conflict', 'the app is deleted: it cannot get new connections');

  it('commits nothing and marks nothing: its gateway gone before releasing the key, the retry runs', async () => {
    const idempotent = request();
    const held = await holdKey(idempotent);
    const name = `refused ${idempotent.key}`;
    const answered = await runFenced(commitFenceOf(store, held), () =>
      withTransaction(db, async (client) => {
        // Written before the check that refuses: rolled back with the refusal.
        await createApp(client, orgId, name);
        return deleted();
      }),
    );
    expect(answered).toMatchObject({ code: 'gw_conflict', status: 409 });
    // Its gateway died before releasing the key: the lease lapses.
    await lapseLease(idempotent.key);
    expect(await keyRow(idempotent.key)).toEqual({ state: 'running', took_effect: false });
    expect(await appsNamed(name)).toEqual([]);
    // Not "committed its change": the same request runs again.
    expect((await store.claim(idempotent)).kind).toBe('claimed');
  });

  it('after an earlier transaction of it committed, leaves its key failed, its change committed: never run again', async () => {
    const idempotent = request();
    const held = await holdKey(idempotent);
    const name = `made, then refused ${idempotent.key}`;
    const answered = await runFenced(commitFenceOf(store, held), async () => {
      await withTransaction(db, (client) => createApp(client, orgId, name));
      return withTransaction(db, async () => deleted());
    });
    expect(answered).toMatchObject({ code: 'gw_conflict' });
    await store.release(held);
    expect(await appsNamed(name)).toHaveLength(1);
    expect(await keyRow(idempotent.key)).toEqual({ state: 'failed', took_effect: true });
    expect(await store.claim(idempotent)).toEqual({ kind: 'failed', effect: 'committed' });
  });
});

describe('a create whose transaction returns a result that only looks like a refusal', () => {
  it('commits it, marked: a `code` named like what every object inherits is no error code (decision 395)', async () => {
    const idempotent = request();
    const held = await holdKey(idempotent);
    const name = `code-named ${idempotent.key}`;
    // A row with a `code` and a `status` of its own, `code` being one of Object's own names.
    const answered = await runFenced(commitFenceOf(store, held), () =>
      withTransaction(db, async (client) => ({
        id: await createApp(client, orgId, name),
        code: 'constructor',
        status: 'active',
      })),
    );
    expect(answered).toMatchObject({ code: 'constructor', status: 'active' });
    expect(await appsNamed(name)).toHaveLength(1);
    expect(await keyRow(idempotent.key)).toEqual({ state: 'running', took_effect: true });
  });
});

describe('what a retry is told while the first request has committed and not answered', () => {
  it('running: committed; its renewals failing past its lease: committed, not taken over; its answer arriving late: replayed', async () => {
    const idempotent = request();
    const held = await holdKey(idempotent);
    const name = `late answer ${idempotent.key}`;
    await runFenced(commitFenceOf(store, held), () =>
      withTransaction(db, (client) => createApp(client, orgId, name)),
    );
    expect(await store.claim(idempotent)).toEqual({ kind: 'running', committed: true });
    // Its renewals fail (Postgres unreachable from its gateway, its pool exhausted) for a lease.
    await lapseLease(idempotent.key);
    expect(await store.claim(idempotent)).toMatchObject({
      kind: 'abandoned',
      effect: 'committed',
    });
    expect(await keyRow(idempotent.key)).toEqual({ state: 'running', took_effect: true });
    // A renewal gets through again: the request still holds its key.
    expect(await store.renew(held)).toBe(true);
    expect(await store.claim(idempotent)).toEqual({ kind: 'running', committed: true });
    await lapseLease(idempotent.key);
    // Its answer arrives: the key replays it.
    await store.complete(held, { status: 201, body: { name }, carriesSecret: false });
    expect(await store.claim(idempotent)).toEqual({ kind: 'replay', status: 201, body: { name } });
    expect(await appsNamed(name)).toHaveLength(1);
  });
});

describe('a kept answer without a master key (migration 069)', () => {
  it('is replayed with its fields in their first order', async () => {
    const idempotent = request({ name: 'ordered' });
    const held = await holdKey(idempotent);
    const answer = { id: 'app_ordered', org_id: orgId, name: 'ordered', created_at: 'now' };
    await store.complete(held, { status: 201, body: answer, carriesSecret: false });
    const replay = await store.claim(idempotent);
    expect(replay).toEqual({ kind: 'replay', status: 201, body: answer });
    if (replay.kind !== 'replay') throw new Error(replay.kind);
    expect(JSON.stringify(replay.body)).toBe(JSON.stringify(answer));
  });

  it('that a gateway of the previous version wrote over an older answer of the key is its own, not the older text', async () => {
    const idempotent = request({ name: 'answered twice' });
    const held = await holdKey(idempotent);
    const older = { id: 'app_older', name: 'answered twice' };
    await store.complete(held, { status: 201, body: older, carriesSecret: false });
    await db.query(
      `UPDATE idempotency_keys SET expires_at = now() - interval '1 second'
        WHERE org_id = $1 AND key = $2`,
      [orgId, idempotent.key],
    );
    // The previous version takes the expired key over and writes its answer in answer_clear
    // alone: the older text is left in the row.
    expect(await claimAsPreviousVersion(idempotent)).toBe(1);
    const newer = { id: 'app_newer', name: 'answered twice' };
    await db.query(
      `UPDATE idempotency_keys SET state = 'done', status = 201, answer_clear = $3
        WHERE org_id = $1 AND key = $2`,
      [orgId, idempotent.key, JSON.stringify(newer)],
    );
    expect(await store.claim(idempotent)).toEqual({ kind: 'replay', status: 201, body: newer });
  });
});

describe('what a request that committed and then failed names of its change (migration 075)', () => {
  /** A request that committed a transaction naming `effectRef`, then broke. */
  async function committedThenFailed(idempotent: IdempotentRequest, effectRef: string) {
    const held = await holdKey(idempotent);
    await runFenced(
      commitFenceOf(store, held, () => effectRef),
      () => withTransaction(db, (client) => client.query('SELECT 1')),
    );
    await store.release(held);
  }

  it('is told to the retry, whose answer is then kept once, for the same request only', async () => {
    const idempotent = request({ name: 'named its change' });
    await committedThenFailed(idempotent, '42');
    expect(await store.claim(idempotent)).toEqual({
      kind: 'failed',
      effect: 'committed',
      effectRef: '42',
    });
    const answer = { status: 201, body: { made: '42' }, carriesSecret: false };
    expect(
      await store.completeUnanswered({ ...idempotent, requestHash: 'other' }, '42', answer),
    ).toBe(false);
    expect(await store.completeUnanswered(idempotent, '41', answer)).toBe(false);
    expect(await store.completeUnanswered(idempotent, '42', answer)).toBe(true);
    expect(await store.completeUnanswered(idempotent, '42', answer)).toBe(false);
    expect(await store.claim(idempotent)).toEqual({
      kind: 'replay',
      status: 201,
      body: { made: '42' },
    });
  });

  it('is told to a retry once the lease of a request that committed it lapsed; kept only then (decision 576)', async () => {
    const idempotent = request({ name: 'named, then stopped' });
    const held = await holdKey(idempotent);
    await runFenced(
      commitFenceOf(store, held, () => '43'),
      () => withTransaction(db, (client) => client.query('SELECT 1')),
    );
    const answer = { status: 201, body: { made: '43' }, carriesSecret: false };
    // Still held: nobody else keeps its answer.
    expect(await store.claim(idempotent)).toEqual({ kind: 'running', committed: true });
    expect(await store.completeUnanswered(idempotent, '43', answer)).toBe(false);
    await lapseLease(idempotent.key);
    expect(await store.claim(idempotent)).toMatchObject({
      kind: 'abandoned',
      effect: 'committed',
      effectRef: '43',
    });
    expect(await store.completeUnanswered(idempotent, '43', answer)).toBe(true);
    // The stopped request's own answer, arriving late, does not replace it.
    await store.complete(held, { status: 201, body: { made: 'late' }, carriesSecret: false });
    expect(await store.claim(idempotent)).toEqual({
      kind: 'replay',
      status: 201,
      body: { made: '43' },
    });
  });

  it('left by an earlier claim of the key is not a later request’s (a previous version took it over)', async () => {
    const idempotent = request({ name: 'named, then taken over' });
    await committedThenFailed(idempotent, '42');
    await db.query(
      `UPDATE idempotency_keys SET expires_at = now() - interval '1 second'
        WHERE org_id = $1 AND key = $2`,
      [orgId, idempotent.key],
    );
    // The previous version (leases, no names) takes the expired key over with a claim of its
    // own, commits, and breaks: the name in the row is the earlier claim's.
    await db.query(
      `UPDATE idempotency_keys
          SET claim_id = 'previous-version-claim', created_at = now(), state = 'failed',
              took_effect = true, lease_expires_at = now() + interval '10 seconds',
              expires_at = now() + interval '1 day'
        WHERE org_id = $1 AND key = $2`,
      [orgId, idempotent.key],
    );
    expect(await store.claim(idempotent)).toEqual({ kind: 'failed', effect: 'committed' });
    const answer = { status: 201, body: { made: '42' }, carriesSecret: false };
    expect(await store.completeUnanswered(idempotent, '42', answer)).toBe(false);
  });
});
