// The webhook dispatcher's transactions are idle on the server for a whole HTTP attempt (up to
// WEBHOOK_TIMEOUT_MS): its pool's idle-in-transaction bound must outlast the longest attempt
// the configuration accepts, or Postgres ends the transaction just before the attempt is
// recorded and the delivery is attempted again at once with no retry step taken (decision 314).
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { createWebhookDeliveryPool } from '../src/gateway.js';
import { TEST_DATABASE_URL } from './support/env.js';

describe('the webhook dispatcher pool', () => {
  it('ends an idle transaction only a minute after the longest attempt', async () => {
    for (const timeoutMs of [3_000, 60_000]) {
      const config = loadConfig({
        DATABASE_URL: TEST_DATABASE_URL,
        WEBHOOK_DELIVERY_CONCURRENCY: '1',
        WEBHOOK_TIMEOUT_MS: String(timeoutMs),
      });
      const pool = createWebhookDeliveryPool(config);
      try {
        const { rows } = await pool.query<{ setting: string }>(
          `SELECT setting FROM pg_settings WHERE name = 'idle_in_transaction_session_timeout'`,
        );
        expect(Number(rows[0]!.setting)).toBe(timeoutMs + 60_000);
      } finally {
        await pool.end();
      }
    }
  });
});
