// Provider credentials at rest and their eligibility: encryption, key rotation, validation
// with the vendor, the CLI's policy warnings, and each eligibility rule excluding a credential
// on its own.
import { beforeAll, describe, expect, it } from 'vitest';
import { tokenRates, type CatalogModel } from '../src/catalog/models.js';
import { SECRET_ON_COMMAND_LINE_WARNING } from '../src/cli/password-input.js';
import { CredentialDirectory } from '../src/credentials/credential-directory.js';
import { parseMasterKeys, SecretBoxError } from '../src/credentials/secret-box.js';
import { writtenCredentialSchema } from '../src/routes/dashboard/credentials/answers.js';
import { openFromText } from '../src/credentials/sealed-text.js';
import { NO_CONNECTION_WARNING as NO_CONNECTION } from '../src/credentials/written-credential.js';
import { isolatedContext } from './support/context.js';
import { TEST_MASTER_KEY } from './support/env.js';
import { runCli, runCliJson, seed, type SeededOrg } from './support/processes.js';
import { vendorA } from '../src/providers/vendor-a/provider.js';
import { vendorB } from '../src/providers/vendor-b/provider.js';

const { env, db } = isolatedContext('cred');
let org: SeededOrg;

interface Credential {
  id: string;
  fingerprint: string;
  status: string;
  app_connection_ids: string[];
}

const rates = tokenRates('0.000001', '0.000001');
const model = (id: string): CatalogModel => ({
  id,
  vendor: id.startsWith('vendor_a/') ? 'vendor_a' : 'vendor_b',
  provider: id.startsWith('vendor_a/') ? vendorA : vendorB,
  upstreamModel: id.split('/')[1]!,
  cost: rates,
  price: rates,
  maxOutputTokens: 100,
  supportsTools: true,
});

beforeAll(async () => {
  org = await seed(env);
});

describe('secret box', () => {
  it('round-trips, refuses tampering, and opens old ciphertexts after rotation', () => {
    const oldBox = parseMasterKeys(TEST_MASTER_KEY, 'old', undefined)!;
    const sealed = oldBox.seal('sk-live-secret');
    expect(sealed.ciphertext.toString('utf8')).not.toContain('sk-live-secret');
    expect(oldBox.open(sealed)).toBe('sk-live-secret');
    const flipped = Buffer.from(sealed.ciphertext);
    flipped[0] = flipped[0]! ^ 0xff; // always a different byte (setting it to 1 was not, 1 in 256)
    const tampered = { ...sealed, ciphertext: flipped };
    expect(() => oldBox.open(tampered)).toThrow(SecretBoxError);
    const newKey = Buffer.alloc(32, 9).toString('base64');
    const rotated = parseMasterKeys(newKey, 'new', `old:${TEST_MASTER_KEY}`)!;
    expect(rotated.open(sealed)).toBe('sk-live-secret');
    expect(rotated.seal('x').keyId).toBe('new');
    expect(() => parseMasterKeys('dG9vIHNob3J0', 'k', undefined)).toThrow(SecretBoxError);
  });
});

describe('gw credentials', () => {
  it('stores a validated key encrypted and shows only its fingerprint', async () => {
    const secret = 'mock-good-key-0001-abcdefghijklmnop';
    const result = await runCli(
      [
        'credentials',
        'add',
        '--org-id',
        org.org_id,
        '--provider',
        'vendor_b',
        '--name',
        'primary',
        '--secret-stdin',
        '--model-policy',
        'vendor_b/*',
        '--app-connection-id',
        org.app_connection_id,
      ],
      env,
      { stdin: secret },
    );
    expect(result.code).toBe(0);
    expect(result.stdout).not.toContain(secret);
    const credential = JSON.parse(result.stdout) as Credential;
    expect(credential.id).toMatch(/^cred_/);
    expect(credential.fingerprint).toMatch(/^sha256:[0-9a-f]{16}$/);
    expect(credential.app_connection_ids).toEqual([org.app_connection_id]);
    const { rows } = await db.query<{ ciphertext: Buffer; key_id: string }>(
      'SELECT ciphertext, key_id FROM provider_credentials WHERE id = $1',
      [credential.id],
    );
    expect(rows[0]!.key_id).toBe('test-k1');
    expect(rows[0]!.ciphertext.toString('latin1')).not.toContain(secret);
    const listed = await runCli(['credentials', 'list', '--org-id', org.org_id], env);
    expect(listed.stdout).not.toContain(secret);
  });

  it('takes the key from standard input or a terminal prompt, and warns when it is an argument', async () => {
    const count = async () =>
      (
        await db.query<{ n: number }>(
          'SELECT count(*)::int AS n FROM provider_credentials WHERE org_id = $1',
          [org.org_id],
        )
      ).rows[0]!.n;
    const add = ['credentials', 'add', '--org-id', org.org_id, '--provider', 'vendor_b'];
    const before = await count();
    // Neither source, no terminal: told how to pipe it, nothing stored, nothing waited for.
    const none = await runCli([...add, '--name', 'none'], env);
    expect(none.code).toBe(2);
    expect(JSON.parse(none.stderr).error.message).toBe(
      `credentials add reads the vendor API key from standard input with --secret-stdin (e.g. printf '%s\\n' "$VENDOR_API_KEY" | gw credentials add … --secret-stdin), or asks for it at a terminal`,
    );
    const both = await runCli(
      [...add, '--name', 'both', '--secret', 'mock-x', '--secret-stdin'],
      env,
      {
        stdin: 'mock-x\n',
      },
    );
    expect(JSON.parse(both.stderr).error.message).toBe(
      'give the vendor API key once: --secret or --secret-stdin, not both',
    );
    expect(await count()).toBe(before);
    // At a terminal it is asked for once, without echo.
    const typed = await runCli([...add, '--name', 'typed'], env, { typed: ['mock-typed-key'] });
    expect([typed.code, typed.stderr]).toEqual([0, 'Vendor API key: ']);
    // On the command line it still works, with a warning (and never the key) on stderr.
    const argument = await runCli(
      [...add, '--name', 'argument', '--secret', 'mock-argument-key'],
      env,
    );
    expect(argument.code).toBe(0);
    expect(argument.stderr).toBe(SECRET_ON_COMMAND_LINE_WARNING);
    expect(await count()).toBe(before + 2);
  });

  it('refuses a key the vendor rejects, storing nothing', async () => {
    const before = await db.query(
      'SELECT count(*)::int AS n FROM provider_credentials WHERE org_id = $1',
      [org.org_id],
    );
    const result = await runCli(
      [
        'credentials',
        'add',
        '--org-id',
        org.org_id,
        '--provider',
        'vendor_a',
        '--name',
        'bad',
        '--secret-stdin',
      ],
      env,
      { stdin: 'mock-bad-key-123' },
    );
    expect(result.code).toBe(2);
    // the dashboard API's code for it, as the README promises of every CLI refusal
    expect(JSON.parse(result.stderr)).toEqual({
      error: {
        code: 'gw_provider_credential_rejected',
        message: 'vendor_a refused this key: nothing was stored',
      },
    });
    expect(result.stderr).not.toContain('mock-bad-key-123');
    const after = await db.query(
      'SELECT count(*)::int AS n FROM provider_credentials WHERE org_id = $1',
      [org.org_id],
    );
    expect(after.rows[0]).toEqual(before.rows[0]);
  });

  it('rewrap re-encrypts under a new master key; the old key can then go', async () => {
    const other = await seed(env);
    const credential = await runCliJson<Credential>(
      [
        'credentials',
        'add',
        '--org-id',
        other.org_id,
        '--provider',
        'vendor_b',
        '--name',
        'r',
        '--secret-stdin',
      ],
      env,
      { stdin: 'mock-rewrap-key-42' },
    );
    // A webhook endpoint's signing secret is sealed with the same master key.
    const hook = await runCliJson<{ id: string; secret: string }>(
      ['webhook', 'add', '--org-id', other.org_id, '--url', 'https://hooks.example.invalid/r'],
      env,
    );
    const newKey = Buffer.alloc(32, 11).toString('base64');
    const rotatedEnv = {
      ...env,
      CREDENTIALS_MASTER_KEY: newKey,
      CREDENTIALS_MASTER_KEY_ID: 'test-k2',
      CREDENTIALS_PREVIOUS_KEYS: `test-k1:${TEST_MASTER_KEY}`,
    };
    const rewrap = await runCliJson<{
      rewrapped: number;
      current_key_id: string;
      webhook_secrets_rewrapped: number;
      idempotent_answers_rewrapped: number;
    }>(['credentials', 'rewrap', '--org-id', other.org_id], rotatedEnv);
    expect(rewrap).toEqual({
      rewrapped: 1,
      current_key_id: 'test-k2',
      webhook_secrets_rewrapped: 1,
      idempotent_answers_rewrapped: 0,
    });
    const { rows: hooks } = await db.query<{ secret_sealed: string }>(
      'SELECT secret_sealed FROM webhook_endpoints WHERE id = $1',
      [hook.id],
    );
    expect(hooks[0]!.secret_sealed.startsWith('test-k2:')).toBe(true);
    expect(
      openFromText(parseMasterKeys(newKey, 'test-k2', undefined)!, hooks[0]!.secret_sealed),
    ).toBe(hook.secret);
    const { rows } = await db.query<{
      key_id: string;
      iv: Buffer;
      ciphertext: Buffer;
      auth_tag: Buffer;
    }>('SELECT key_id, iv, ciphertext, auth_tag FROM provider_credentials WHERE id = $1', [
      credential.id,
    ]);
    const onlyNew = parseMasterKeys(newKey, 'test-k2', undefined)!;
    const row = rows[0]!;
    expect(row.key_id).toBe('test-k2');
    expect(
      onlyNew.open({
        keyId: row.key_id,
        iv: row.iv,
        ciphertext: row.ciphertext,
        authTag: row.auth_tag,
      }),
    ).toBe('mock-rewrap-key-42');
    // Put the test key back for the other tests of this run.
    await runCliJson(['credentials', 'rewrap', '--org-id', other.org_id], {
      ...env,
      CREDENTIALS_PREVIOUS_KEYS: `test-k2:${newKey}`,
    });
    await db.query('DELETE FROM webhook_endpoints WHERE id = $1', [hook.id]);
  });
});

describe('previous master keys as an operator writes them (decision 492)', () => {
  it('reads a list with spaces after its commas, and refuses an entry under the current id or an id no key can have', async () => {
    const other = await seed(env);
    await runCliJson(
      [
        'credentials',
        'add',
        '--org-id',
        other.org_id,
        '--provider',
        'vendor_b',
        '--name',
        's',
        '--secret-stdin',
      ],
      env,
      { stdin: 'mock-spaced-key-7' },
    );
    const newKey = Buffer.alloc(32, 13).toString('base64');
    const spare = Buffer.alloc(32, 14).toString('base64');
    const rotated = (previous: string): Record<string, string> => ({
      ...env,
      CREDENTIALS_MASTER_KEY: newKey,
      CREDENTIALS_MASTER_KEY_ID: 'test-k3',
      CREDENTIALS_PREVIOUS_KEYS: previous,
    });
    // `k0:…, test-k1:…`: the key after the space is test-k1's, the one the credential is under.
    const rewrap = await runCli(
      ['credentials', 'rewrap', '--org-id', other.org_id],
      rotated(`spare:${spare}, test-k1:${TEST_MASTER_KEY}`),
    );
    expect(rewrap.stderr).toBe('');
    expect(JSON.parse(rewrap.stdout)).toMatchObject({ rewrapped: 1, current_key_id: 'test-k3' });
    // Another key under the current id, or under an id no sealed value can name, is refused at
    // once (466), naming the variable, never the key: a space no longer hides either.
    for (const previous of [`spare:${spare}, test-k3:${TEST_MASTER_KEY}`, `old key:${spare}`]) {
      const refused = await runCli(['wallet', 'show', '--org-id', other.org_id], rotated(previous));
      expect(refused.code, previous).toBe(2);
      const error = (JSON.parse(refused.stderr) as { error: { code: string; message: string } })
        .error;
      expect(error.code, previous).toBe('gw_invalid_config');
      expect(error.message, previous).toContain('CREDENTIALS_PREVIOUS_KEYS: ');
      expect(error.message).not.toContain(spare);
      expect(error.message).not.toContain(TEST_MASTER_KEY);
    }
    // Put the test key back for the other tests of this run.
    await runCliJson(['credentials', 'rewrap', '--org-id', other.org_id], {
      ...env,
      CREDENTIALS_PREVIOUS_KEYS: `test-k3:${newKey}`,
    });
  });
});

describe('gw credentials warnings', () => {
  it('add and update print the warnings of the policy they wrote, in the dashboard API’s answer shape', async () => {
    const owner = await seed(env);
    const warned = (id: string) =>
      `${id} is not in the model catalogue (yet): the credential serves it once it is added`;
    type Written = Credential & { model_policy: string[]; priority: number; warnings: string[] };
    const storedPolicy = async (id: string) =>
      (
        await db.query<{ model_policy: string[] }>(
          'SELECT model_policy FROM provider_credentials WHERE id = $1',
          [id],
        )
      ).rows[0]?.model_policy;
    const base = ['--org-id', owner.org_id, '--provider', 'vendor_b'];
    const added = await runCliJson<Written>(
      [
        ...['credentials', 'add', ...base, '--name', 'early', '--secret-stdin'],
        ...['--model-policy', 'vendor_b/gpt-4o-mini,vendor_b/gpt-next-preview'],
      ],
      env,
      { stdin: 'mock-warned-1' },
    );
    // added without --app-connection-id: granted to none, said first
    expect(added.warnings).toEqual([NO_CONNECTION, warned('vendor_b/gpt-next-preview')]);
    expect(Object.keys(added).sort()).toEqual(Object.keys(writtenCredentialSchema.shape).sort());
    expect(await storedPolicy(added.id)).toEqual([
      'vendor_b/gpt-4o-mini',
      'vendor_b/gpt-next-preview',
    ]);

    const changed = await runCliJson<Written>(
      ['credentials', 'update', '--id', added.id, '--model-policy', 'vendor_b/*,vendor_b/o9'],
      env,
    );
    expect(changed.warnings).toEqual([NO_CONNECTION, warned('vendor_b/o9')]);
    expect(await storedPolicy(added.id)).toEqual(['vendor_b/*', 'vendor_b/o9']);
    // a change that writes no policy warns of no model, whatever the stored one names
    const reordered = await runCliJson<Written>(
      ['credentials', 'update', '--id', added.id, '--priority', '2'],
      env,
    );
    expect([reordered.priority, reordered.model_policy, reordered.warnings]).toEqual([
      2,
      ['vendor_b/*', 'vendor_b/o9'],
      [NO_CONNECTION],
    ]);
    // the provider's own models by default, granted to a connection: nothing to warn of
    const plain = await runCliJson<Written>(
      [
        ...['credentials', 'add', ...base, '--name', 'plain', '--secret-stdin'],
        ...['--app-connection-id', owner.app_connection_id],
      ],
      env,
      { stdin: 'mock-warned-2' },
    );
    expect([plain.model_policy, plain.app_connection_ids, plain.warnings]).toEqual([
      ['vendor_b/*'],
      [owner.app_connection_id],
      [],
    ]);
    // a policy refused is named by its flag, not the API's field (decision 589); nothing written
    const refused = await runCli(
      ['credentials', 'update', '--id', plain.id, '--model-policy', 'vendor_a/*'],
      env,
    );
    expect(refused.code).toBe(2);
    expect(JSON.parse(refused.stderr).error.message).toMatch(
      /^--model-policy: "vendor_a\/\*" names another provider/,
    );
    expect(await storedPolicy(plain.id)).toEqual(['vendor_b/*']);
  });

  it('a credential left granted to no connection is warned of by add, grant, revoke-grant, update, disable and enable', async () => {
    const owner = await seed(env);
    type Written = Credential & { warnings: string[] };
    const connection = ['--app-connection-id', owner.app_connection_id];
    const added = await runCliJson<Written>(
      [
        ...['credentials', 'add', '--org-id', owner.org_id, '--provider', 'vendor_b'],
        ...['--name', 'ungranted', '--secret-stdin'],
      ],
      env,
      { stdin: 'mock-ungranted-1' },
    );
    expect([added.app_connection_ids, added.warnings]).toEqual([[], [NO_CONNECTION]]);
    // the words a user reads
    expect(added.warnings[0]).toContain('granted to no app connection, so it serves no request');
    const id = ['--id', added.id];
    const printed = async (args: string[]) => {
      const answer = await runCliJson<Written>(['credentials', ...args], env);
      return [answer.app_connection_ids, answer.warnings];
    };
    expect(await printed(['disable', ...id])).toEqual([[], [NO_CONNECTION]]);
    expect(await printed(['enable', ...id])).toEqual([[], [NO_CONNECTION]]);
    expect(await printed(['grant', ...id, ...connection])).toEqual([[owner.app_connection_id], []]);
    expect(await printed(['update', ...id, '--priority', '3'])).toEqual([
      [owner.app_connection_id],
      [],
    ]);
    expect(await printed(['revoke-grant', ...id, ...connection])).toEqual([[], [NO_CONNECTION]]);
    expect(await printed(['update', ...id, '--name', 'still ungranted'])).toEqual([
      [],
      [NO_CONNECTION],
    ]);
    // deleting answers the deleted credential, with nothing left to warn of
    const deleted = await runCliJson<Written>(['credentials', 'delete', ...id], env);
    expect([deleted.status, deleted.warnings]).toEqual(['deleted', undefined]);
  });
});

describe('eligibility', () => {
  it('each of status, model policy, priority and connection grant excludes a credential on its own', async () => {
    const owner = await seed(env);
    const otherConnection = await seed(env);
    const base = [
      '--org-id',
      owner.org_id,
      '--provider',
      'vendor_b',
      '--app-connection-id',
      owner.app_connection_id,
    ];
    const eligible = await runCliJson<Credential>(
      ['credentials', 'add', ...base, '--name', 'eligible', '--secret-stdin', '--priority', '1'],
      env,
      { stdin: 'mock-e1' },
    );
    const backup = await runCliJson<Credential>(
      ['credentials', 'add', ...base, '--name', 'backup', '--secret-stdin', '--priority', '2'],
      env,
      { stdin: 'mock-e2' },
    );
    const disabled = await runCliJson<Credential>(
      ['credentials', 'add', ...base, '--name', 'disabled', '--secret-stdin'],
      env,
      { stdin: 'mock-e3' },
    );
    await runCliJson(['credentials', 'disable', '--id', disabled.id], env);
    await runCliJson<Credential>(
      [
        'credentials',
        'add',
        ...base,
        '--name',
        'policy',
        '--secret-stdin',
        '--model-policy',
        'vendor_b/gpt-4o',
      ],
      env,
      { stdin: 'mock-e4' },
    );
    await runCliJson<Credential>(
      [
        'credentials',
        'add',
        '--org-id',
        owner.org_id,
        '--provider',
        'vendor_b',
        '--name',
        'ungranted',
        '--secret-stdin',
      ],
      env,
      { stdin: 'mock-e5' },
    );
    await runCliJson<Credential>(
      [
        'credentials',
        'add',
        '--org-id',
        owner.org_id,
        '--provider',
        'vendor_a',
        '--name',
        'other vendor',
        '--secret-stdin',
        '--app-connection-id',
        owner.app_connection_id,
      ],
      env,
      { stdin: 'mock-e6' },
    );

    const directory = new CredentialDirectory(
      db,
      parseMasterKeys(TEST_MASTER_KEY, 'test-k1', undefined),
    );
    const choice = await directory.choiceFor(
      owner.org_id,
      owner.app_connection_id,
      model('vendor_b/gpt-4o-mini'),
    );
    expect(choice).toEqual({ tiers: [[eligible.id], [backup.id]], byokOnly: false });
    expect(await directory.secretOf(owner.org_id, eligible.id)).toBe('mock-e1');
    expect(
      await directory.choiceFor(
        owner.org_id,
        otherConnection.app_connection_id,
        model('vendor_b/gpt-4o-mini'),
      ),
    ).toBeNull();

    await runCliJson(['credentials', 'delete', '--id', backup.id], env);
    directory.handleInvalidation({ kind: 'credentials' });
    const afterDelete = await directory.choiceFor(
      owner.org_id,
      owner.app_connection_id,
      model('vendor_b/gpt-4o-mini'),
    );
    expect(afterDelete).toEqual({ tiers: [[eligible.id]], byokOnly: false });
    const { rows } = await db.query(
      'SELECT 1 FROM provider_credential_grants WHERE credential_id = $1',
      [backup.id],
    );
    expect(rows).toHaveLength(0);
  });
});
