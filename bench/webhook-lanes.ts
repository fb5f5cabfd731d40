// npm run build && node dist/bench/webhook-lanes.js [--messages 400] [--subjects 200]
//   [--delay-ms 50] [--runs 3] [--concurrency 4] [--instances 1,2]
//   [--before /path/to/other/build/dist/src/webhooks/dispatcher.js]
// Webhook delivery to one endpoint answering in `--delay-ms`, in-process on the real Postgres
// (DATABASE_URL, migrated; its own organization): `--messages` product_user.created messages
// about `--subjects` product users are queued, then `--instances` dispatchers (each on its
// own pool, WEBHOOK_DELIVERY_CONCURRENCY `--concurrency`) deliver them; reports messages/s
// from the dispatchers' start to the last 2xx, and the most requests the receiver had in
// flight at once. `--before` runs the dispatcher of another build (the one before lanes, on
// this schema, as during a rolling deploy) in the same run, turn about, for the ratio.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { createOrganization } from '../src/admin/provisioning.js';
import { parseMasterKeys } from '../src/credentials/secret-box.js';
import { createDbPool, type DbPool } from '../src/db/pool.js';
import { ensureDatabase, migrate } from '../src/db/migrate.js';
import { createLogger } from '../src/log.js';
import { DeliveryClient } from '../src/webhooks/delivery-client.js';
import { WebhookDispatcher } from '../src/webhooks/dispatcher.js';
import { createEndpoint } from '../src/webhooks/endpoints.js';
import { emitEvents } from '../src/webhooks/outbox.js';
import { median } from './measure.js';

const { values: flags } = parseArgs({
  options: {
    messages: { type: 'string', default: '400' },
    subjects: { type: 'string', default: '200' },
    'delay-ms': { type: 'string', default: '50' },
    runs: { type: 'string', default: '3' },
    concurrency: { type: 'string', default: '4' },
    instances: { type: 'string', default: '1,2' },
    before: { type: 'string' },
  },
});
const messageCount = Number(flags.messages);
const subjectCount = Number(flags.subjects);
const delayMs = Number(flags['delay-ms']);
const runs = Number(flags.runs);
const concurrency = Number(flags.concurrency);
const instanceCounts = flags.instances.split(',').map(Number);
const databaseUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/gw';

type DispatcherClass = typeof WebhookDispatcher;
interface Build {
  readonly name: string;
  readonly Dispatcher: DispatcherClass;
}

const box = parseMasterKeys(randomBytes(32).toString('base64'), 'bench', undefined)!;
const policy = { allowHttp: true, allowPrivate: true };
const logger = createLogger('warn', 'bench');

// The receiver: answers 200 after delayMs, counts what it got and what was in flight.
let received = 0;
let inFlight = 0;
let maxInFlight = 0;
let whenAll: { count: number; resolve: () => void } | undefined;
const server = createServer((request, response) => {
  inFlight += 1;
  maxInFlight = Math.max(maxInFlight, inFlight);
  request.resume();
  request.on('end', () => {
    setTimeout(() => {
      inFlight -= 1;
      response.writeHead(200).end('ok');
      received += 1;
      if (whenAll && received >= whenAll.count) whenAll.resolve();
    }, delayMs);
  });
});

async function oneRun(db: DbPool, build: Build, instances: number): Promise<number> {
  const orgId = await createOrganization(db, `bench webhooks ${build.name}`);
  const created = await createEndpoint(db, { policy, box }, { userId: 'bench' }, orgId, {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
  });
  if ('code' in created) throw new Error(created.message);
  await emitEvents(
    db,
    Array.from({ length: messageCount }, (_, index) => ({
      orgId,
      type: 'product_user.created' as const,
      data: { product_end_user_id: `pu_bench_${index % subjectCount}`, n: index },
    })),
  );
  received = 0;
  maxInFlight = 0;
  const done = new Promise<void>((resolve) => (whenAll = { count: messageCount, resolve }));
  const pools = Array.from({ length: instances }, () => createDbPool(databaseUrl, concurrency + 1));
  const dispatchers = pools.map(
    (pool) =>
      new build.Dispatcher(
        pool,
        new DeliveryClient(policy, 10_000),
        box,
        { concurrency, retryScheduleS: [1], disableAfterMs: 86_400_000, pollIntervalMs: 100 },
        logger,
      ),
  );
  const startedAt = performance.now();
  for (const dispatcher of dispatchers) dispatcher.start();
  await done;
  const seconds = (performance.now() - startedAt) / 1000;
  for (const dispatcher of dispatchers) await dispatcher.stop();
  for (const pool of pools) await pool.end();
  await db.query('DELETE FROM organizations WHERE id = $1', [orgId]);
  const rate = messageCount / seconds;
  console.log(
    `${build.name}, ${instances} instance(s): ${rate.toFixed(1)} messages/s, ` +
      `at most ${maxInFlight} in flight`,
  );
  return rate;
}

async function main(): Promise<void> {
  await ensureDatabase(databaseUrl);
  const db = createDbPool(databaseUrl, 4);
  await migrate(db);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const builds: Build[] = [{ name: 'this build', Dispatcher: WebhookDispatcher }];
  if (flags.before) {
    const before = (await import(flags.before)) as { WebhookDispatcher: DispatcherClass };
    builds.unshift({ name: 'before', Dispatcher: before.WebhookDispatcher });
  }
  const rates = new Map<string, number[]>();
  for (let run = 0; run < runs; run += 1) {
    for (const instances of instanceCounts) {
      for (const build of builds) {
        const key = `${build.name}, ${instances} instance(s)`;
        rates.set(key, [...(rates.get(key) ?? []), await oneRun(db, build, instances)]);
      }
    }
  }
  console.log(
    `\n${messageCount} messages about ${subjectCount} subjects, receiver ${delayMs} ms, ` +
      `concurrency ${concurrency} per instance; medians of ${runs}:`,
  );
  for (const instances of instanceCounts) {
    const after = median(rates.get(`this build, ${instances} instance(s)`)!);
    const before = rates.get(`before, ${instances} instance(s)`);
    console.log(
      `  ${instances} instance(s): ${after.toFixed(1)} messages/s` +
        (before
          ? ` (before: ${median(before).toFixed(1)}; ratio ${(after / median(before)).toFixed(2)})`
          : ''),
    );
  }
  server.close();
  await db.end();
}

await main();
