// An API key's model policy is checked where it is written (decision 338): `gw api-key create`
// refuses a pattern that can never match a model, with the dashboard API's code, and stores
// nothing; a model the catalogue does not list yet is accepted with a warning.
import { describe, expect, it } from 'vitest';
import { isolatedContext } from './support/context.js';
import { runCli, runCliJson, seed } from './support/processes.js';

const { env, db } = isolatedContext('keypolicy');

const keysOf = async (connectionId: string): Promise<number> =>
  Number(
    (
      await db.query<{ n: string }>(
        'SELECT count(*) AS n FROM api_keys WHERE app_connection_id = $1',
        [connectionId],
      )
    ).rows[0]!.n,
  );

describe('gw api-key create --model-policy', () => {
  it('refuses a pattern no model can match, says why, and issues no key', async () => {
    const org = await seed(env);
    const before = await keysOf(org.app_connection_id);
    for (const [policy, message] of [
      [
        'vendor_c/*',
        /"vendor_c\/\*" names no registered provider: patterns start with vendor_a\/ or vendor_b\//,
      ],
      ['gpt-4o', /"gpt-4o" names no provider/],
      ['vendor_b/*,gpt-4o', /"gpt-4o" names no provider/],
      ['vendor_b/gpt-*', /"vendor_b\/gpt-\*" is not a pattern/],
      ['', /must allow at least one model/],
    ] as const) {
      const refused = await runCli(
        [
          'api-key',
          'create',
          '--app-connection-id',
          org.app_connection_id,
          '--model-policy',
          policy,
        ],
        env,
      );
      expect(refused.code, policy).toBe(2);
      const { error } = JSON.parse(refused.stderr) as { error: { code: string; message: string } };
      expect(error.code, policy).toBe('gw_invalid_request');
      // Named as the flag the user typed, not the API's field (decision 589).
      expect(error.message, policy).toMatch(/^--model-policy: /);
      expect(error.message, policy).toMatch(message);
    }
    expect(await keysOf(org.app_connection_id)).toBe(before);
  });

  it('issues a key for a model the catalogue does not list yet, with a warning naming it', async () => {
    const org = await seed(env);
    const issued = await runCliJson<{ model_policy: string[]; warnings: string[] }>(
      [
        'api-key',
        'create',
        '--app-connection-id',
        org.app_connection_id,
        '--model-policy',
        'vendor_b/gpt-5,vendor_b/gpt-4o-mini,vendor_a/*',
      ],
      env,
    );
    expect(issued.model_policy).toEqual(['vendor_b/gpt-5', 'vendor_b/gpt-4o-mini', 'vendor_a/*']);
    expect(issued.warnings).toEqual([
      'vendor_b/gpt-5 is not in the model catalogue (yet): the key serves it once it is added',
    ]);
    const plain = await runCliJson<{ warnings: string[] }>(
      ['api-key', 'create', '--app-connection-id', org.app_connection_id],
      env,
    );
    expect(plain.warnings).toEqual([]);
  });
});
