// Where the tests find the real services. Each test file isolates itself with its own Redis
// key prefix and its own organizations; all files share one test database.
import { randomBytes } from 'node:crypto';
import { redisTarget, type RedisTarget } from '../../src/redis/target.js';

export const TEST_DATABASE_URL =
  process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/gw_test';
/**
 * The suite's migrated template (test/support/global-setup.ts): a file with a database of its
 * own gets a copy of it (test/support/context.ts), not a new database migrated anew.
 */
export const TEMPLATE_DATABASE_URL = `${TEST_DATABASE_URL}_template`;
export const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
/**
 * A Redis Cluster to run on instead (host:port,…): set by the `cluster` vitest project
 * (vitest.config.ts) for the files that run on both; the gateways and CLI calls get it too.
 */
export const TEST_REDIS_CLUSTER_NODES = process.env.TEST_REDIS_CLUSTER_NODES ?? '';

/** Where the tests' own Redis handles connect. */
export function testRedisTarget(): RedisTarget {
  return redisTarget({ REDIS_URL: TEST_REDIS_URL, REDIS_CLUSTER_NODES: TEST_REDIS_CLUSTER_NODES });
}

/** A Redis key prefix no other test file uses. */
export function uniquePrefix(label: string): string {
  return `t-${label}-${randomBytes(4).toString('hex')}`;
}

/** A master key for provider credentials in tests (32 bytes, base64). Never a real one. */
export const TEST_MASTER_KEY = Buffer.alloc(32, 7).toString('base64');

/**
 * A gateway's settings that send both vendors' calls to `url`: a mock vendor, or a front before
 * one (the mock takes any key).
 */
export function vendorsAt(url: string): Record<string, string> {
  return {
    VENDOR_A_BASE_URL: url,
    VENDOR_A_API_KEY: 'vendor-a-key',
    VENDOR_B_BASE_URL: url,
    VENDOR_B_API_KEY: 'vendor-b-key',
  };
}

/** The environment a gateway process or CLI call under test runs with. */
export function baseEnv(prefix: string): Record<string, string> {
  return {
    DATABASE_URL: TEST_DATABASE_URL,
    REDIS_URL: TEST_REDIS_URL,
    REDIS_CLUSTER_NODES: TEST_REDIS_CLUSTER_NODES,
    REDIS_KEY_PREFIX: prefix,
    HOST: '127.0.0.1',
    CREDENTIALS_MASTER_KEY: TEST_MASTER_KEY,
    CREDENTIALS_MASTER_KEY_ID: 'test-k1',
    PORT: '0',
    METRICS_PORT: '0',
    // Test gateways deliver no webhooks unless a test asks (webhook-receiver.ts: webhookEnv):
    // all of them share one database, so any dispatcher would deliver any test's messages.
    WEBHOOK_DELIVERY_CONCURRENCY: '0',
    // Two test workers run a dozen gateways at once on one Postgres (max_connections 100):
    // request pools of 5, not 20 (decision 334).
    DATABASE_POOL_SIZE: '5',
    // Password hashes at 2^10, not the floor's 2^15 (~0.3 s of a core each here): the suite
    // makes and checks a few thousand (decision 573; test/password-cost.test.ts checks both).
    PASSWORD_SCRYPT_N: '1024',
  };
}
