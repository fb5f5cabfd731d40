// SIGTERM and the gateway's own background sends (decision 408): once the drain begins, no
// webhook attempt and no e-mail attempt starts; the attempt under way finishes and is recorded;
// what came due during the drain stays due in Postgres and the next instance sends it, once.
// A stream in flight holds the drain open for seconds, as a rolling deploy's would.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMockVendors, type RunningMockVendors } from '../src/mock-vendors/server.js';
import { isolatedContext } from './support/context.js';
import { TEST_PASSWORD, DashboardClient, uniqueEmail } from './support/dashboard.js';
import { vendorsAt } from './support/env.js';
import { bearer } from './support/http.js';
import { mailCatcherUrl, startMailCatcher, type MailCatcher } from './support/mail-catcher.js';
import {
  runCli,
  runCliJson,
  seed,
  startGateway,
  type GatewayProcess,
  type SeededOrg,
} from './support/processes.js';
import { eventually, freePort } from './support/services.js';
import { WebhookReceiver, webhookEnv } from './support/webhook-receiver.js';

// A database of its own: no other file's dispatcher or e-mail sender sends these messages.
const context = isolatedContext('bg-drain', { ownDatabase: true });
const { db } = context;
const FIRST_RETRY_DELAY_MS = 2_500;
const receiver = new WebhookReceiver();
let vendor: RunningMockVendors;
let catcher: MailCatcher | undefined;
let smtpPort: number;
let org: SeededOrg;
let env: Record<string, string>;
const gateways: GatewayProcess[] = [];

beforeAll(async () => {
  smtpPort = await freePort(); // nothing listens yet: the first e-mail attempt is refused
  [vendor] = await Promise.all([
    // A 160-token answer takes 8 s: in flight at the signal, it holds the drain open well past
    // the e-mail's retry.
    startMockVendors({ host: '127.0.0.1', port: 0, tokensPerSecond: 20 }),
    receiver.start(),
  ]);
  env = {
    ...webhookEnv(context.prefix),
    DATABASE_URL: context.env.DATABASE_URL!,
    ...vendorsAt(vendor.url),
    SHUTDOWN_GRACE_MS: '20000',
    // The held attempt is answered within the drain, not timed out.
    WEBHOOK_TIMEOUT_MS: '10000',
    SMTP_URL: mailCatcherUrl(smtpPort),
    EMAIL_FROM: 'gw <no-reply@gw.example.test>',
    PUBLIC_ORIGIN: 'https://gw.example.test',
  };
  org = await seed(env);
});

afterAll(async () => {
  await Promise.all(gateways.map((gateway) => gateway.stop()));
  await catcher?.close();
  await receiver.stop();
  await vendor?.close();
});

async function mailingGateway(): Promise<GatewayProcess> {
  const gateway = await startGateway(env, {
    emailSenderTiming: { firstRetryDelayMs: FIRST_RETRY_DELAY_MS, stopWaitMs: 500 },
  });
  gateways.push(gateway);
  return gateway;
}

async function addEndpoint(path: string): Promise<string> {
  const added = await runCliJson<{ id: string; secret: string }>(
    ['webhook', 'add', '--org-id', org.org_id, '--url', receiver.endpoint(path)],
    env,
  );
  receiver.setSecrets(path, [added.secret]);
  return added.id;
}

const sendTest = async (endpointId: string): Promise<string> =>
  (await runCliJson<{ message_id: string }>(['webhook', 'test', '--id', endpointId], env))
    .message_id;

async function delivery(messageId: string): Promise<{ state: string; attempt_count: number }> {
  const { rows } = await db.query<{ state: string; attempt_count: number }>(
    'SELECT state, attempt_count FROM webhook_deliveries WHERE message_id = $1',
    [messageId],
  );
  return rows[0]!;
}

const outboxAttempts = async (): Promise<number[]> =>
  (await db.query<{ attempts: number }>('SELECT attempts FROM email_outbox')).rows.map(
    (row) => row.attempts,
  );

describe('SIGTERM with webhook and e-mail work due', () => {
  it('starts no attempt once the drain begins, finishes the one under way, leaves the rest due', async () => {
    const gateway = await mailingGateway();
    const [held, later] = await Promise.all([addEndpoint('/held'), addEndpoint('/later')]);

    // An e-mail whose first attempt fails (no SMTP server yet): its retry is due 2.5 s later.
    const email = uniqueEmail('drain').toLowerCase();
    const created = await runCli(
      ['admin', 'create-user', '--email', email, '--password-stdin'],
      env,
      { stdin: TEST_PASSWORD },
    );
    expect(created.code).toBe(0);
    const asked = await new DashboardClient(gateway.url, `https://127.0.0.1:${gateway.port}`).post(
      '/auth/password-reset/request',
      { email },
      { csrf: false },
    );
    expect(asked.status).toBe(202);
    await eventually(async () => ((await outboxAttempts())[0] === 1 ? true : undefined));

    // A webhook attempt under way: its receiver answers when the test says.
    let answer!: () => void;
    const answered = new Promise<void>((resolve) => (answer = resolve));
    receiver.behave('/held', () => ({ status: 200, heldUntil: answered }));
    const underWay = await sendTest(held);
    await receiver.waitFor('/held', 'webhook.test', 1);

    // A stream in flight, then SIGTERM's drain.
    const stream = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...bearer(org.api_key) },
      body: JSON.stringify({
        model: 'vendor_b/gpt-4o-mini',
        max_tokens: 1000,
        stream: true,
        messages: [{ role: 'user', content: 'drain mock:output_tokens=160' }],
      }),
    });
    expect(stream.status).toBe(200);
    const streamed = stream.text();
    const stopped = gateway.stop();

    // During the drain: a webhook message comes due on another endpoint (free lanes, free
    // slots), the SMTP server comes up and the e-mail's retry comes due.
    const dueDuringDrain = await sendTest(later);
    catcher = await startMailCatcher({ port: smtpPort });
    await new Promise((resolve) => setTimeout(resolve, FIRST_RETRY_DELAY_MS + 500));
    answer();
    expect(await streamed).toContain('data: [DONE]');
    expect(await stopped).toBe(0);

    // The attempt under way finished and was recorded; nothing else was attempted.
    expect(receiver.ofType('/held', 'webhook.test')).toHaveLength(1);
    expect(await delivery(underWay)).toEqual({ state: 'delivered', attempt_count: 1 });
    expect(receiver.ofType('/later', 'webhook.test')).toHaveLength(0);
    expect(await delivery(dueDuringDrain)).toEqual({ state: 'pending', attempt_count: 0 });
    expect(catcher.to(email)).toHaveLength(0);
    expect(await outboxAttempts()).toEqual([1]);

    // The next instance sends what waited, once.
    await mailingGateway();
    await receiver.waitFor('/later', 'webhook.test', 1);
    await catcher.nth(email, 1, 30_000);
    await eventually(async () => ((await outboxAttempts()).length === 0 ? true : undefined));
    await eventually(async () =>
      (await delivery(dueDuringDrain)).state === 'delivered' ? true : undefined,
    );
    expect(receiver.ofType('/later', 'webhook.test')).toHaveLength(1);
    expect(receiver.ofType('/held', 'webhook.test')).toHaveLength(1);
    expect(catcher.to(email)).toHaveLength(1);
  }, 90_000);
});
