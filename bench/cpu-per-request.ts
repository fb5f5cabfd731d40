// node dist/bench/cpu-per-request.js [--requests 20000 --rounds 5 --connections 50,1 --base DIR
//   --base-env NAME=VALUE]
// The json scenario's CPU per request of each target process, over a fixed number of requests:
// the design floor, this checkout's gateway and, with --base, the gateway built in another
// checkout (an A/B of two builds in one run, on the same Redis keys and database). CPU time is
// read from /proc around each run, so it holds on a loaded machine where req/s does not; the
// runs are interleaved (the order reversed every other round) and the medians reported, with
// each gateway's req/s as a ratio of the floor's in the same round. --base-env sets something for
// the base gateway only: `--base . --base-env REQUEST_LOG_SAMPLE_RATE=0` measures what the
// request log costs.
import { parseArgs } from 'node:util';
import { measure, median, type LoadSpec } from './measure.js';
import { cpuMicros, redisPid } from './proc-cpu.js';
import {
  BENCH_PROMPT,
  gwCli,
  productUserHeaders,
  startDesignFloor,
  startGatewayTarget,
  startMock,
  stopAndClean,
  type Target,
} from './targets.js';

const { values: flags } = parseArgs({
  options: {
    requests: { type: 'string', default: '20000' },
    rounds: { type: 'string', default: '5' },
    connections: { type: 'string', default: '50' },
    /** Another checkout (its `dist/` built) whose gateway is measured beside this one's. */
    base: { type: 'string' },
    /** A setting for the base gateway only (repeatable): NAME=VALUE. */
    'base-env': { type: 'string', multiple: true, default: [] },
  },
});
const requests = Number(flags.requests);
const rounds = Number(flags.rounds);

interface Sample {
  readonly cpuMicrosPerRequest: number;
  readonly redisMicrosPerRequest: number;
  readonly requestsPerSecond: number;
  readonly errors: number;
}

async function run(target: Target, spec: LoadSpec, redis: number | undefined): Promise<Sample> {
  const pid = target.child.pid!;
  const cpuBefore = cpuMicros(pid);
  const redisBefore = redis ? cpuMicros(redis) : 0;
  const started = performance.now();
  const result = await measure(spec);
  const seconds = (performance.now() - started) / 1000;
  return {
    cpuMicrosPerRequest: (cpuMicros(pid) - cpuBefore) / requests,
    redisMicrosPerRequest: redis ? (cpuMicros(redis) - redisBefore) / requests : NaN,
    requestsPerSecond: requests / seconds,
    errors: result.errors,
  };
}

async function main(): Promise<void> {
  const mock = await startMock();
  const gateway = await startGatewayTarget(mock.url);
  const base = flags.base
    ? await startGatewayTarget(mock.url, [], {
        sharing: gateway,
        checkout: flags.base,
        name: 'gateway (base)',
        extraEnv: Object.fromEntries(
          flags['base-env'].map((setting) => {
            const equals = setting.indexOf('=');
            return [setting.slice(0, equals), setting.slice(equals + 1)];
          }),
        ),
      })
    : undefined;
  const floor = await startDesignFloor(mock.url, gateway);
  const targets: Target[] = [floor, gateway, ...(base ? [base] : [])];
  try {
    const org = await gwCli<{ api_key: string }>(
      ['seed', '--json', '--wallet', '1000000'],
      gateway.env,
    );
    const redis = redisPid();
    for (const connections of flags.connections.split(',').map(Number)) {
      const spec = (target: Target, amount: number): LoadSpec => ({
        url: target.url,
        connections,
        durationSeconds: 0,
        amount,
        body: JSON.stringify(BENCH_PROMPT),
        headers: {
          authorization: `Bearer ${target === floor ? 'mock-bench-key' : org.api_key}`,
        },
        headersFor: productUserHeaders(8),
      });
      for (const target of targets) await measure(spec(target, Math.min(requests, 3000)));
      const samples = new Map<Target, Sample[]>(targets.map((target) => [target, []]));
      const floorRatios = new Map<Target, number[]>(targets.map((target) => [target, []]));
      for (let round = 0; round < rounds; round += 1) {
        const order = round % 2 === 0 ? targets : [...targets].reverse();
        const measured = new Map<Target, Sample>();
        for (const target of order)
          measured.set(target, await run(target, spec(target, requests), redis));
        for (const target of targets) {
          samples.get(target)!.push(measured.get(target)!);
          floorRatios
            .get(target)!
            .push(measured.get(target)!.requestsPerSecond / measured.get(floor)!.requestsPerSecond);
        }
        process.stderr.write(`${connections} connections, round ${round + 1} of ${rounds}\n`);
      }
      process.stdout.write(
        `\n${requests} requests × ${rounds} rounds at ${connections} connection(s), medians:\n\n` +
          '| target | CPU µs/req | each round | Redis µs/req | req/s | req/s vs floor | errors |\n' +
          '|---|---|---|---|---|---|---|\n',
      );
      for (const target of targets) {
        const list = samples.get(target)!;
        const cpu = list.map((sample) => sample.cpuMicrosPerRequest);
        process.stdout.write(
          `| ${target.name} | ${median(cpu).toFixed(0)} | ${cpu.map((value) => value.toFixed(0)).join(', ')} ` +
            `| ${median(list.map((sample) => sample.redisMicrosPerRequest)).toFixed(0)} ` +
            `| ${median(list.map((sample) => sample.requestsPerSecond)).toFixed(0)} ` +
            `| ${target === floor ? '—' : median(floorRatios.get(target)!).toFixed(2)} ` +
            `| ${list.reduce((sum, sample) => sum + sample.errors, 0)} |\n`,
        );
      }
    }
  } finally {
    await stopAndClean([mock, ...targets]);
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`bench failed: ${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
