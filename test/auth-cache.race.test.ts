// Key caches against the real Redis and Postgres, with the races forced: a lookup is paused
// between its Postgres read and its cache fill while the key is revoked, and floods of
// unknown keys are counted at the records port (the only way a lookup reaches Postgres).
import { beforeAll, describe, expect, it } from 'vitest';
import {
  createApiKey,
  createApp,
  createAppConnection,
  createOrganization,
  createServiceKey,
  revokeApiKey,
} from '../src/admin/provisioning.js';
import { PostgresApiKeyRecords, type ApiKeyRecords } from '../src/auth/api-key-records.js';
import { ApiKeyStore } from '../src/auth/api-key-store.js';
import {
  PostgresServiceKeyRecords,
  ServiceKeyStore,
  type ServiceKeyRecords,
} from '../src/auth/service-key-store.js';
import { createRedisKeys } from '../src/redis/keys.js';
import { sha256Hex } from '../src/ids.js';
import { isolatedContext } from './support/context.js';
import { eventually } from './support/services.js';

const { prefix, db, redis } = isolatedContext('auth-cache');
const keys = createRedisKeys(prefix);
let connection: { orgId: string; appId: string; appConnectionId: string };

const bearer = (key: string): Record<string, string> => ({ authorization: `Bearer ${key}` });
const unknownKey = (n: number): string => `gw_${'U'.repeat(30)}${String(n).padStart(10, '0')}`;

/** A records port over Postgres that counts lookups and can hold one after its read. */
class ObservedRecords<Row> {
  lookups = 0;
  private hold: { read: () => void; release: Promise<void> } | undefined;
  private heldUntil: Promise<void> = Promise.resolve();

  constructor(private readonly inner: { findByHash(keyHash: string): Promise<Row | undefined> }) {}

  /** The next lookup reads Postgres, then waits for `release` before returning. */
  holdNextAfterRead(): { read: Promise<void>; release: () => void } {
    let signalRead!: () => void;
    let release!: () => void;
    const read = new Promise<void>((resolve) => (signalRead = resolve));
    this.hold = { read: signalRead, release: new Promise<void>((resolve) => (release = resolve)) };
    return { read, release };
  }

  /** Every lookup from now on waits after its read until `release`. */
  holdAll(): { release: () => void } {
    let release!: () => void;
    this.heldUntil = new Promise<void>((resolve) => (release = resolve));
    return { release };
  }

  async findByHash(keyHash: string): Promise<Row | undefined> {
    this.lookups += 1;
    const row = await this.inner.findByHash(keyHash);
    await this.heldUntil;
    const hold = this.hold;
    if (hold) {
      this.hold = undefined;
      hold.read();
      await hold.release;
    }
    return row;
  }
}

beforeAll(async () => {
  const orgId = await createOrganization(db, 'auth-cache');
  const appId = await createApp(db, orgId, 'app');
  const appConnectionId = await createAppConnection(db, orgId, appId, 'conn');
  connection = { orgId, appId, appConnectionId };
});

describe('a revoke racing a cache fill (API keys)', () => {
  it('a lookup that read Postgres before the revoke cannot write "active" back after it', async () => {
    const issued = await createApiKey(db, connection);
    const records = new ObservedRecords(new PostgresApiKeyRecords(db) as ApiKeyRecords);
    const racing = new ApiKeyStore(db, redis, keys, 30_000, { records });

    const paused = records.holdNextAfterRead();
    const lookup = racing.authenticate(bearer(issued.rawKey));
    await paused.read; // Postgres said "active"
    expect(await revokeApiKey(db, racing, issued.id)).toBe(true);
    paused.release(); // now the fill runs, after the revoke
    // The lookup began before the revoke: it may still answer with what it read.
    expect(await lookup).toMatchObject({ keyId: issued.id, active: true });

    // But nothing it read was kept: not in Redis, not in its own process.
    expect(await redis.get(keys.apiKey(sha256Hex(issued.rawKey)))).toBeNull();
    expect(await racing.authenticate(bearer(issued.rawKey))).toMatchObject({
      code: 'gw_key_inactive',
    });
    const otherInstance = new ApiKeyStore(db, redis, keys, 30_000);
    expect(await otherInstance.authenticate(bearer(issued.rawKey))).toMatchObject({
      code: 'gw_key_inactive',
    });
  });

  it('another instance filling Redis during the revoke cannot resurrect the key either', async () => {
    const issued = await createApiKey(db, connection);
    const records = new ObservedRecords(new PostgresApiKeyRecords(db) as ApiKeyRecords);
    const filler = new ApiKeyStore(db, redis, keys, 30_000, { records });
    const revoker = new ApiKeyStore(db, redis, keys, 30_000);

    const paused = records.holdNextAfterRead();
    const lookup = filler.authenticate(bearer(issued.rawKey));
    await paused.read;
    await revokeApiKey(db, revoker, issued.id); // the filler has not heard of it yet
    paused.release();
    await lookup;
    expect(await redis.get(keys.apiKey(sha256Hex(issued.rawKey)))).toBeNull();
    expect(
      await new ApiKeyStore(db, redis, keys, 30_000).authenticate(bearer(issued.rawKey)),
    ).toMatchObject({ code: 'gw_key_inactive' });
  });

  it('a fill with no revoke in between is kept in Redis', async () => {
    const issued = await createApiKey(db, connection);
    const store = new ApiKeyStore(db, redis, keys, 30_000);
    expect(await store.authenticate(bearer(issued.rawKey))).toMatchObject({ active: true });
    const cached = await redis.get(keys.apiKey(sha256Hex(issued.rawKey)));
    expect(JSON.parse(cached!)).toMatchObject({ keyId: issued.id, active: true });
  });
});

describe('a revoke racing a cache fill (service keys)', () => {
  it('a lookup that read Postgres before the revoke does not keep "active"', async () => {
    const issued = await createServiceKey(db, connection.orgId);
    const records = new ObservedRecords(new PostgresServiceKeyRecords(db) as ServiceKeyRecords);
    const store = new ServiceKeyStore(db, 60_000, { records });

    const paused = records.holdNextAfterRead();
    const lookup = store.authenticate(bearer(issued.rawKey), 'product_users:read');
    await paused.read;
    await db.query(`UPDATE service_keys SET status = 'revoked' WHERE id = $1`, [issued.id]);
    store.handleInvalidation({ kind: 'service-keys' }); // what the pub/sub message does
    paused.release();
    expect(await lookup).toMatchObject({ keyId: issued.id });

    expect(await store.authenticate(bearer(issued.rawKey), 'product_users:read')).toMatchObject({
      code: 'gw_service_key_inactive',
      message: 'this service key is revoked',
    });
  });
});

describe('unknown keys do not each reach Postgres', () => {
  it('one unknown key, sent 200 times to two instances, is looked up once', async () => {
    const records = new ObservedRecords(new PostgresApiKeyRecords(db) as ApiKeyRecords);
    const first = new ApiKeyStore(db, redis, keys, 30_000, { records });
    const second = new ApiKeyStore(db, redis, keys, 30_000, { records });
    const key = unknownKey(1);
    const answers = await Promise.all(
      Array.from({ length: 100 }, () => first.authenticate(bearer(key))),
    );
    for (let i = 0; i < 100; i += 1) answers.push(await second.authenticate(bearer(key)));
    expect(answers.every((answer) => 'code' in answer && answer.code === 'gw_unknown_key')).toBe(
      true,
    );
    expect(records.lookups).toBe(1); // the second instance found the miss in Redis
  });

  it('a flood of distinct unknown keys: bounded lookups in flight, the excess shed with 503', async () => {
    const records = new ObservedRecords(new PostgresApiKeyRecords(db) as ApiKeyRecords);
    const store = new ApiKeyStore(db, redis, keys, 30_000, {
      records,
      maxConcurrentLookups: 2,
      maxWaitingLookups: 8,
    });
    const held = records.holdAll(); // every lookup waits after its read until released
    let answered = 0;
    const answers = Array.from({ length: 100 }, (_, i) =>
      store.authenticate(bearer(unknownKey(1000 + i))).then((answer) => {
        answered += 1;
        return answer;
      }),
    );
    // 2 lookups run (held), 8 wait for a slot, the other 90 are answered at once.
    await eventually(async () => (answered === 90 && records.lookups === 2 ? true : undefined));
    held.release();
    const codes = (await Promise.all(answers)).map((answer) =>
      'code' in answer ? answer.code : '',
    );
    expect(records.lookups).toBe(10);
    expect(codes.filter((code) => code === 'gw_unknown_key')).toHaveLength(10);
    expect(codes.filter((code) => code === 'gw_unavailable')).toHaveLength(90);
    const shed = (await Promise.all(answers)).find(
      (answer) => 'code' in answer && answer.code === 'gw_unavailable',
    );
    expect(shed).toEqual({
      code: 'gw_unavailable',
      status: 503,
      message: 'too many lookups of uncached keys are in flight on this instance; retry shortly',
    });
  });

  it('unknown service keys are remembered too', async () => {
    const records = new ObservedRecords(new PostgresServiceKeyRecords(db) as ServiceKeyRecords);
    const store = new ServiceKeyStore(db, 5_000, { records });
    const key = `gw_svc_${'U'.repeat(40)}`;
    for (let i = 0; i < 50; i += 1) {
      expect(await store.authenticate(bearer(key), 'product_users:read')).toMatchObject({
        code: 'gw_unknown_service_key',
      });
    }
    expect(records.lookups).toBe(1);
  });
});
