// Webhooks cannot be aimed at the gateway's own network: URLs that are not https, or that name
// or resolve to addresses that are not globally reachable (loopback, private, link-local where
// cloud metadata lives, documentation, …), are refused, naming which kind, when an
// endpoint is saved (nothing stored) and again on every connection, with the address checked
// being the one connected to, so a name re-pointed after the check (DNS rebinding) gets
// nowhere.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DeliveryClient } from '../src/webhooks/delivery-client.js';
import type { Resolver } from '../src/webhooks/target-policy.js';
import { isolatedContext } from './support/context.js';
import { runCli, seed, type SeededOrg } from './support/processes.js';
import { WebhookReceiver } from './support/webhook-receiver.js';

const { env, db } = isolatedContext('wh-ssrf');
const receiver = new WebhookReceiver();
let org: SeededOrg;

beforeAll(async () => {
  await receiver.start();
  org = await seed(env);
});

afterAll(async () => {
  await db.query('DELETE FROM webhook_endpoints WHERE org_id = $1', [org.org_id]);
  await receiver.stop();
});

describe('when an endpoint is saved', () => {
  it.each([
    ['http://hooks.example.com/in', 'must be an https URL'],
    ['https://127.0.0.1/in', 'must not point to a loopback address in 127.0.0.0/8'],
    ['https://localhost:8443/in', 'resolves to a loopback address in'],
    ['https://192.0.2.10/in', 'must not point to a documentation address in 192.0.2.0/24'],
    ['https://10.0.0.8/in', 'must not point'],
    ['https://192.168.0.10/in', 'must not point'],
    ['https://169.254.169.254/latest/meta-data/', 'must not point'],
    ['https://[::1]/in', 'must not point'],
    ['https://[fd00:ec2::254]/in', 'must not point'],
    ['https://[::ffff:127.0.0.1]/in', 'must not point'],
    ['https://2130706433/in', 'must not point'], // 127.0.0.1 as one number
    ['https://[2001::808:808]/in', 'must not point'], // Teredo, server 0.0.0.0
    ['https://[2001:0:4136:e378:8000:63bf:80ff:fffe]/in', 'must not point'], // Teredo to 127.0.0.1
    ['https://[64:ff9b::a00:8]/in', 'must not point'], // NAT64 of 10.0.0.8
    ['https://[2002:a9fe:a9fe::1]/in', 'must not point'], // 6to4 of 169.254.169.254
    ['https://192.0.0.8/in', 'must not point'], // inside 192.0.0.0/24, next to PCP anycast
    ['https://[2001:1::4]/in', 'must not point'], // inside 2001::/23, next to DNS-SD anycast
    ['https://[5f00::1]/in', 'must not point'], // SRv6 segment identifiers
    ['https://hooks.example.com:0/in', 'must not use port 0'],
    ['https://admin:pw@hooks.example.com/in', 'must not carry credentials'],
  ])('refuses %s (gw_webhook_url_not_allowed), storing nothing', async (url, reason) => {
    const result = await runCli(['webhook', 'add', '--org-id', org.org_id, '--url', url], env);
    expect(result.code).toBe(2);
    const { error } = JSON.parse(result.stderr) as { error: { code: string; message: string } };
    expect(error.code).toBe('gw_webhook_url_not_allowed');
    expect(error.message).toContain(reason);
    const { rows } = await db.query('SELECT 1 FROM webhook_endpoints WHERE org_id = $1', [
      org.org_id,
    ]);
    expect(rows).toEqual([]);
  });

  it('says the CLI reads the settings that would take a local receiver from its own environment (decision 470)', async () => {
    const refusal = async (url: string, extraEnv: Record<string, string> = {}) => {
      const result = await runCli(['webhook', 'add', '--org-id', org.org_id, '--url', url], {
        ...env,
        ...extraEnv,
      });
      expect(result.code).toBe(2);
      return (JSON.parse(result.stderr) as { error: { code: string; message: string } }).error;
    };
    const hint = (settings: string) =>
      ` (this CLI reads ${settings} from its own environment, as the gateway does: a local receiver needs them set for both)`;
    expect(await refusal('http://127.0.0.1:8765/in')).toEqual({
      code: 'gw_webhook_url_not_allowed',
      message: `url: must be an https URL${hint('WEBHOOK_ALLOW_HTTP=true and WEBHOOK_ALLOW_PRIVATE_TARGETS=true')}`,
    });
    expect(await refusal('http://127.0.0.1:8765/in', { WEBHOOK_ALLOW_HTTP: 'true' })).toEqual({
      code: 'gw_webhook_url_not_allowed',
      message: `url: must not point to a loopback address in 127.0.0.0/8${hint('WEBHOOK_ALLOW_PRIVATE_TARGETS=true')}`,
    });
    // No setting takes it: no hint.
    expect(await refusal('https://admin:pw@hooks.example.com/in')).toEqual({
      code: 'gw_webhook_url_not_allowed',
      message: 'url: must not carry credentials',
    });
  });

  it.each([
    'https://hooks.example.invalid/in', // its name need not resolve yet
    'https://192.0.0.9/in', // PCP anycast: globally reachable inside 192.0.0.0/24
    'https://[2001:3::1]/in', // AMT: globally reachable inside 2001::/23
    'https://[2001:20::1]/in', // ORCHIDv2, the same
    'https://[64:ff9b::808:808]/in', // NAT64 of 8.8.8.8
  ])('accepts %s', async (url) => {
    const result = await runCli(['webhook', 'add', '--org-id', org.org_id, '--url', url], env);
    expect(result.code).toBe(0);
    const { id } = JSON.parse(result.stdout) as { id: string };
    expect(id).toMatch(/^wh_/);
    const { rows } = await db.query('SELECT url FROM webhook_endpoints WHERE id = $1', [id]);
    expect(rows).toEqual([{ url }]);
  });
});

describe('when a delivery connects', () => {
  const policy = { allowHttp: true, allowPrivate: false };
  const pointingTo =
    (address: string): Resolver =>
    () =>
      Promise.resolve([{ address, family: address.includes(':') ? 6 : 4 }]);

  // The name passed the check when saved (it pointed at a public address); now it points at
  // the receiver on 127.0.0.1, or at an IPv6 address that leads there, or at an address IANA
  // marks not globally reachable.
  it.each([
    ['127.0.0.1', 'a loopback address in 127.0.0.0/8'],
    ['64:ff9b::7f00:1', 'a loopback address in 127.0.0.0/8'],
    ['2002:7f00:1::1', 'a loopback address in 127.0.0.0/8'],
    ['::ffff:127.0.0.1', 'a loopback address in 127.0.0.0/8'],
    ['192.0.0.170', 'a NAT64/DNS64 discovery address in 192.0.0.170/32'],
  ])(
    'a name that now resolves to %s is refused before any byte is sent (%s)',
    async (address, named) => {
      const client = new DeliveryClient(policy, 2000, pointingTo(address));
      const port = new URL(receiver.url).port;
      const result = await client.post(`http://rebound.example.com:${port}/hook`, '{}', {
        'webhook-id': 'msg_rebind',
      });
      await client.close();
      expect(result.statusCode).toBeNull();
      expect(result.error).toBe(`refused: rebound.example.com: resolves to ${named}`);
      expect(receiver.received).toEqual([]);
    },
  );

  it('a stored URL with a private address is refused under a stricter policy', async () => {
    const client = new DeliveryClient(policy, 2000);
    const result = await client.post(`${receiver.url}/hook`, '{}', {});
    await client.close();
    expect(result.error).toBe('refused: url must not point to a loopback address in 127.0.0.0/8');
    expect(receiver.received).toEqual([]);
  });

  it('where private targets are allowed (tests, on-premise), the same connection goes through', async () => {
    const client = new DeliveryClient(
      { allowHttp: true, allowPrivate: true },
      2000,
      pointingTo('127.0.0.1'),
    );
    const port = new URL(receiver.url).port;
    receiver.setSecrets('/open', []);
    const result = await client.post(`http://rebound.example.com:${port}/open`, '{}', {
      'webhook-id': 'msg_open',
    });
    await client.close();
    // The receiver refuses it (no secret verifies it), but it was reached.
    expect(result.statusCode).toBe(400);
    expect(receiver.unverified.map((entry) => entry.path)).toEqual(['/open']);
  });
});
