// Micro-benchmark: what a 4 MiB adversarial body costs the token counter, and whether /healthz
// notices while such bodies are counted (run: node dist/bench/micro/token-count.js).
// CPU is reported as a ratio to JSON.parse of the same body (work every request pays anyway);
// /healthz latency while counting as a ratio to idle, measured in the same run.
import { performance } from 'node:perf_hooks';
import { createHttpServer } from '../../src/http/server.js';
import { createLogger } from '../../src/log.js';
import { bindRoutes } from '../../src/routes/framework/bind.js';
import type { Authenticators } from '../../src/routes/framework/declaration.js';
import { healthzRoute } from '../../src/routes/healthz.js';
import { countInputTokens } from '../../src/tokens/count.js';
import { PiscinaTokenCounter } from '../../src/tokens/token-counter.js';
import { cpuMs } from './cpu-time.js';

const MIB = 1024 * 1024;
const repeatTo = (unit: string, bytes: number): string =>
  unit.repeat(Math.floor(bytes / Buffer.byteLength(unit)));
let seed = 1;
const randomWords = (bytes: number): string => {
  let text = '';
  while (text.length < bytes) {
    seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
    text += `${seed.toString(36)} `;
  }
  return text;
};

const bodies: Record<string, string> = {
  'one letter, 4 MiB': repeatTo('a', 4 * MIB),
  'CJK without spaces, 4 MiB': repeatTo('漢', 4 * MIB),
  'whitespace, 4 MiB': repeatTo(' ', 4 * MIB),
  'punctuation and newlines, 4 MiB': repeatTo('!?\n', 4 * MIB),
  '128-letter words, 4 MiB': repeatTo(`${'b'.repeat(127)} `, 4 * MIB),
  'random short words, 4 MiB': randomWords(4 * MIB),
};

process.stdout.write(
  '| body | count CPU (ms) | JSON.parse CPU (ms) | count / parse |\n|---|---|---|---|\n',
);
for (const [name, text] of Object.entries(bodies)) {
  const json = JSON.stringify({ messages: [{ role: 'user', content: text }] });
  const parseMs = cpuMs(() => JSON.parse(json));
  const countMs = cpuMs(() => countInputTokens([text]));
  process.stdout.write(
    `| ${name} | ${countMs.toFixed(1)} | ${parseMs.toFixed(1)} | ${(countMs / parseMs).toFixed(2)} |\n`,
  );
}

// /healthz while 4 MiB adversarial bodies are counted back to back in the worker pool.
const noCaller = async (): Promise<never> => {
  throw new Error('no authenticated routes here');
};
const authenticators: Authenticators = {
  apiKey: noCaller,
  serviceKey: noCaller,
  session: noCaller,
  orgMember: noCaller,
  dashboardVisitor: noCaller,
  oauthClient: noCaller,
};
const server = createHttpServer({
  routes: bindRoutes([healthzRoute], {} as never, authenticators),
  maxBodyBytes: 1024,
  logger: createLogger('silent'),
});
const port = await server.listen('127.0.0.1', 0);
const counter = new PiscinaTokenCounter(2);

async function healthzLatenciesMs(requests: number): Promise<number[]> {
  const latencies: number[] = [];
  for (let index = 0; index < requests; index += 1) {
    const start = performance.now();
    await (await fetch(`http://127.0.0.1:${port}/healthz`)).text();
    latencies.push(performance.now() - start);
  }
  return latencies.sort((a, b) => a - b);
}
const percentile = (sorted: number[], p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;

const adversarial = [bodies['one letter, 4 MiB']!, bodies['CJK without spaces, 4 MiB']!];
await Promise.all(adversarial.map((text) => counter.countInput([text]))); // both threads up
await healthzLatenciesMs(200); // warm
const idle = await healthzLatenciesMs(2000);
let counting = true;
let counted = 0;
const load = (async () => {
  while (counting) {
    await Promise.all(adversarial.map((text) => counter.countInput([text])));
    counted += adversarial.length;
  }
})();
const busy = await healthzLatenciesMs(2000);
counting = false;
await load;
process.stdout.write(
  `\n/healthz while ${counted} adversarial 4 MiB bodies were counted: ` +
    `p50 ${percentile(busy, 0.5).toFixed(3)} ms (idle ${percentile(idle, 0.5).toFixed(3)}, ratio ${(percentile(busy, 0.5) / percentile(idle, 0.5)).toFixed(2)}), ` +
    `p99 ${percentile(busy, 0.99).toFixed(3)} ms (idle ${percentile(idle, 0.99).toFixed(3)}, ratio ${(percentile(busy, 0.99) / percentile(idle, 0.99)).toFixed(2)})\n`,
);
await counter.close();
server.stopAccepting();
process.exit(0);
