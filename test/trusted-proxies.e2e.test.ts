// Behind a reverse proxy, sign-in failures count per client only when the gateway knows the
// proxy (TRUSTED_PROXIES, decision 418): a request from a trusted peer counts as from the
// address X-Forwarded-For names (the rightmost one that is not a trusted proxy), so a guesser
// behind the proxy is held back and the owner behind the same proxy still signs in; an address
// the client wrote to the left proves nothing. From a peer that is not trusted (or with
// TRUSTED_PROXIES unset) the header is ignored: nobody can pick their own address. An entry
// with the port the proxy saw, or an IPv6 one in brackets, names its address (decision 449).
import { createHash } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isolatedContext } from './support/context.js';
import { postJson } from './support/http.js';
import { runCliJson, startGateway, type GatewayProcess } from './support/processes.js';

const { env, redis, prefix } = isolatedContext('trusted-proxies');
const PASSWORD = 'correct horse battery staple';
let behindProxy: GatewayProcess;
let direct: GatewayProcess;

beforeAll(async () => {
  // The test's requests come from 127.0.0.1: to the first gateway, that is its proxy.
  behindProxy = await startGateway({ ...env, TRUSTED_PROXIES: '127.0.0.1/32, ::1' });
  direct = await startGateway({ ...env, TRUSTED_PROXIES: '10.0.0.0/8' });
});

afterAll(async () => {
  await behindProxy?.stop();
  await direct?.stop();
});

async function newUser(label: string): Promise<string> {
  const email = `${label}-${Math.random().toString(36).slice(2, 10)}@example.com`;
  await runCliJson(['admin', 'create-user', '--email', email, '--password-stdin'], env, {
    stdin: PASSWORD,
  });
  return email;
}

function login(gateway: GatewayProcess, email: string, password: string, forwardedFor: string) {
  return postJson(
    `${gateway.url}/auth/login`,
    { email, password },
    { origin: `https://127.0.0.1:${gateway.port}`, 'x-forwarded-for': forwardedFor },
  );
}

/** A gateway's request-log lines (the one behind the proxy unless told). */
const requestLines = (gateway = behindProxy): Array<Record<string, unknown>> =>
  gateway
    .output()
    .split('\n')
    .filter((line) => line.includes('"msg":"request"'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);

const requestLine = (requestId: string, gateway = behindProxy) =>
  requestLines(gateway).find((line) => line.requestId === requestId);

const failuresAt = (email: string) =>
  redis.hgetall(
    `${prefix}:login-fail:account-clients:${createHash('sha256').update(email).digest('hex')}`,
  );

describe('sign-in failures behind a trusted proxy', () => {
  it('count per forwarded client: the guesser is held back, the owner behind the same proxy signs in', async () => {
    const email = await newUser('proxied');
    const guesser = '203.0.113.7';
    for (let attempt = 0; attempt < 5; attempt += 1) {
      expect((await login(behindProxy, email, 'wrong password!', guesser)).status).toBe(401);
    }
    expect((await login(behindProxy, email, PASSWORD, guesser)).status).toBe(429);
    // An address the guesser writes to the left is not believed: the proxy appended the real one.
    expect((await login(behindProxy, email, PASSWORD, `198.51.100.9, ${guesser}`)).status).toBe(
      429,
    );
    expect((await login(behindProxy, email, PASSWORD, '198.51.100.9')).status).toBe(200);
    expect(await failuresAt(email)).toEqual({ all: '7', [guesser]: '7' });
  });

  it('count a forwarded IPv6 client by its /64, as a peer: moving around its /64 gains no guesses', async () => {
    const email = await newUser('proxied-v6');
    // Proxies write the address they saw in its short form, not as uWebSockets.js writes a peer.
    for (let host = 1; host <= 5; host += 1) {
      const answer = await login(behindProxy, email, 'wrong password!', `2001:db8:7:1::${host}`);
      expect(answer.status).toBe(401);
    }
    expect((await login(behindProxy, email, PASSWORD, '2001:db8:7:1::beef')).status).toBe(429);
    expect((await login(behindProxy, email, PASSWORD, '2001:DB8:7:1:0:0:0:6')).status).toBe(429);
    // another /64 is another client
    expect((await login(behindProxy, email, PASSWORD, '2001:db8:7:2::1')).status).toBe(200);
    expect(await failuresAt(email)).toEqual({ all: '7', '2001:0db8:0007:0001::/64': '7' });
  });

  it('count per client when the proxy writes its port (ip:port, [ipv6]:port), and log the address without it', async () => {
    // Azure Application Gateway writes the client's port; before, such an entry was no address
    // and every client counted as the proxy, so the guesser held the owner out.
    const email = await newUser('proxied-port');
    for (let attempt = 0; attempt < 5; attempt += 1) {
      const answer = await login(behindProxy, email, 'wrong password!', '203.0.113.77:51234');
      expect(answer.status).toBe(401);
    }
    expect((await login(behindProxy, email, PASSWORD, '203.0.113.77:40001')).status).toBe(429);
    expect((await login(behindProxy, email, PASSWORD, '[2001:db8:7:3::7]:40001')).status).toBe(200);
    const owner = await login(behindProxy, email, PASSWORD, '198.51.100.99:51234');
    expect(owner.status).toBe(200);
    expect(await failuresAt(email)).toEqual({ all: '6', '203.0.113.77': '6' });
    await expect
      .poll(() => requestLine(owner.headers.get('x-request-id')!))
      .toMatchObject({ route: '/auth/login', status: 200, clientAddress: '198.51.100.99' });
    const guesser = requestLines().filter((line) => line.clientAddress === '203.0.113.77');
    expect(guesser.map((line) => line.status)).toEqual([401, 401, 401, 401, 401, 429]);
  });

  it('read X-Forwarded-For sent as several header lines as one list, in order (decision 453)', async () => {
    // HAProxy's `option forwardfor` adds a header line of its own rather than appending to the
    // one it received: behind a CDN that wrote the client, the gateway gets the client in the
    // first line and the CDN's edge (a trusted proxy) in the second. Taking the last line
    // alone, every client of that edge counted as the edge and one guesser held the owners out.
    const email = await newUser('proxied-lines');
    const loginWithLines = (password: string, lines: string[]) =>
      new Promise<number>((resolve, reject) => {
        const body = JSON.stringify({ email, password });
        const sent = httpRequest(
          `${behindProxy.url}/auth/login`,
          {
            method: 'POST',
            headers: {
              'content-type': 'application/json',
              'content-length': Buffer.byteLength(body),
              origin: `https://127.0.0.1:${behindProxy.port}`,
              'x-forwarded-for': lines,
            },
          },
          (answer) => {
            answer.resume();
            answer.on('end', () => resolve(answer.statusCode ?? 0));
          },
        );
        sent.on('error', reject);
        sent.end(body);
      });
    for (let attempt = 0; attempt < 5; attempt += 1) {
      expect(await loginWithLines('wrong password!', ['203.0.113.51', '127.0.0.1'])).toBe(401);
    }
    expect(await loginWithLines(PASSWORD, ['203.0.113.51', '127.0.0.1'])).toBe(429);
    // the owner, another client of the same edge, signs in
    expect(await loginWithLines(PASSWORD, ['198.51.100.52', '127.0.0.1'])).toBe(200);
    // a line the client wrote itself, before the proxies' lines, still proves nothing
    expect(await loginWithLines(PASSWORD, ['198.51.100.52', '203.0.113.51', '127.0.0.1'])).toBe(
      429,
    );
    expect(await failuresAt(email)).toEqual({ all: '7', '203.0.113.51': '7' });
  });

  it('from a peer that is not a trusted proxy, ignore X-Forwarded-For', async () => {
    const email = await newUser('direct');
    for (let attempt = 0; attempt < 5; attempt += 1) {
      expect((await login(direct, email, 'wrong password!', '203.0.113.7')).status).toBe(401);
    }
    // Another forwarded address is the same client: the header is the client's own.
    const answer = await login(direct, email, PASSWORD, '198.51.100.9');
    expect(answer.status).toBe(429);
    expect(Object.keys(await failuresAt(email)).sort()).toEqual(['127.0.0.1', 'all']);
  });

  it('on a dual-stack listener, count and log an IPv4 client by its IPv4 address (decision 472)', async () => {
    // uWS gives the IPv4 peer of a listener on :: as 0000:0000:0000:0000:0000:ffff:7f00:0001.
    const dualStack = await startGateway({ ...env, HOST: '::' });
    try {
      const email = await newUser('dual-stack');
      const answer = await login(dualStack, email, 'wrong password!', '203.0.113.7');
      expect(answer.status).toBe(401);
      await expect
        .poll(() => requestLine(answer.headers.get('x-request-id')!, dualStack))
        .toEqual(expect.objectContaining({ clientAddress: '127.0.0.1' }));
      expect(await failuresAt(email)).toEqual({ all: '1', '127.0.0.1': '1' });
    } finally {
      await dualStack.stop();
    }
  });
});
