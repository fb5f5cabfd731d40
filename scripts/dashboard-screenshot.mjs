// node scripts/dashboard-screenshot.mjs: writes docs/images/dashboard-overview.png, the README's
// picture of the dashboard, from the build (run `npm run build` first). It starts a gateway in
// this process (the mock vendors answer), seeds an organization, sends it some traffic from a
// few product users, signs a new owner in with chromium (playwright-core, no browser
// download) and photographs the organization's overview at 1280×1000.
//
// Environment: DATABASE_URL (default postgres://postgres@127.0.0.1:5432/gw_screenshots, made if
// missing), REDIS_URL (default redis://127.0.0.1:6379; a random key prefix, deleted after),
// CHROMIUM_PATH (default /usr/bin/chromium), OUT (default docs/images/dashboard-overview.png).
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { chromium } from 'playwright-core';

const root = new URL('../', import.meta.url);
const dist = (path) => new URL(`dist/src/${path}`, root).href;
const { loadConfig } = await import(dist('config.js'));
const { startGateway } = await import(dist('gateway.js'));
const { runCli } = await import(dist('cli/main.js'));
const { withCliIo } = await import(dist('cli/io.js'));
const { connectRedis, quitRedis } = await import(dist('redis/connect.js'));

const prefix = `screenshot-${randomBytes(4).toString('hex')}`;
const env = {
  ...process.env,
  DATABASE_URL: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/gw_screenshots',
  REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
  REDIS_KEY_PREFIX: prefix,
  HOST: '127.0.0.1',
  PORT: '0',
  METRICS_ENABLED: 'false',
  DASHBOARD_INSECURE_COOKIES: 'true',
  LOG_LEVEL: 'warn',
};
const out = process.env.OUT ?? fileURLToPath(new URL('docs/images/dashboard-overview.png', root));
const email = `owner-${randomBytes(3).toString('hex')}@example.com`;
const password = 'a long passphrase for the picture';

/** Runs a `gw` command in this process with `stdin` piped to it (none: empty); its JSON answer. */
async function gwWithInput(stdin, ...args) {
  let stdout = '';
  let stderr = '';
  const io = {
    env,
    write: (stream, text) => (stream === 'stdout' ? (stdout += text) : (stderr += text)),
    inputIsTerminal: false,
    readInput: () => Promise.resolve(stdin),
    askSecret: () => Promise.reject(new Error('no terminal to ask at')),
  };
  const code = await withCliIo(io, () => runCli(args));
  if (code !== 0) throw new Error(`gw ${args.join(' ')} failed: ${stderr}`);
  return JSON.parse(stdout);
}

/** Runs a `gw` command in this process; its JSON answer. */
const gw = (...args) => gwWithInput('', ...args);

const config = loadConfig(env);
const gateway = await startGateway(config, pino({ level: 'warn' }));
const url = `http://127.0.0.1:${gateway.port}`;
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run'],
});
try {
  const org = await gw('seed', '--name', 'Acme Robotics');
  await gw('cap', 'set', '--scope', 'org', '--org-id', org.org_id, '--amount', '25.00');
  await gwWithInput(
    `${password}\n`,
    'admin',
    'create-user',
    '--email',
    email,
    '--password-stdin',
    '--org-id',
    org.org_id,
    '--role',
    'owner',
  );

  // Traffic: a handful of product users on both mock vendors, some of them busier than others.
  const users = ['customer-42', 'customer-7', 'ada@acme.test', 'grace', 'linus'];
  const models = org.models.slice(0, 4);
  for (let index = 0; index < 60; index += 1) {
    const user = users[Math.min(index % 7, users.length - 1)];
    const model = models[index % models.length];
    const response = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${org.api_key}`,
        'content-type': 'application/json',
        'x-gw-external-user-id': user,
      },
      body: JSON.stringify({
        model,
        max_tokens: 64 + (index % 5) * 100,
        messages: [
          { role: 'user', content: `Question ${index}: ${'tell me more '.repeat(index % 9)}` },
        ],
      }),
    });
    if (response.status !== 200)
      throw new Error(`request ${index}: ${response.status} ${await response.text()}`);
    await response.arrayBuffer();
  }
  // The usage writer puts the records in Postgres shortly after: let the overview count them.
  await new Promise((resolve) => setTimeout(resolve, 3000));

  const context = await browser.newContext({ viewport: { width: 1280, height: 1000 } });
  const page = await context.newPage();
  await page.goto(`${url}/dashboard/`);
  await page.getByLabel('E-mail').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
  await page.goto(`${url}/dashboard/orgs/${org.org_id}`);
  await page.getByRole('heading', { name: 'Acme Robotics' }).waitFor();
  await page.waitForLoadState('networkidle');
  await page.screenshot({ path: out });
  process.stdout.write(`wrote ${out} (org ${org.org_id})\n`);
} finally {
  await browser.close();
  await gateway.stop();
  const redis = connectRedis({ kind: 'single', url: env.REDIS_URL }, { maxRetriesPerRequest: 2 });
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length > 0) await redis.del(...keys);
  } while (cursor !== '0');
  await quitRedis(redis);
}
