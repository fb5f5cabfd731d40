// npm run bench:profile [-- --duration 10 --connections 50 --stream --plain --gc --node-arg=…]
// Runs the gateway under load with V8's CPU profiler and prints where its main thread spends
// time: the top functions by self time and the totals per package. The profile file stays in
// the printed directory for Chrome DevTools or speedscope.
// --gc instead traces the gateway's garbage collector and prints what its young-generation
// collections promote per request: the bytes a request keeps alive past a scavenge. It is a
// count, not a time, so it holds on a busy machine where req/s does not (bench/RESULTS.md,
// "the CPU regression traced to the young-generation collector").
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { GcTrace } from './gc-trace.js';
import { measure } from './measure.js';
import { cpuMicros, machineTicks, postgresPids, redisPid } from './proc-cpu.js';
import {
  BENCH_PROMPT,
  gwCli,
  productUserHeaders,
  startGatewayTarget,
  startMock,
  stopAndClean,
} from './targets.js';

const { values: flags } = parseArgs({
  options: {
    duration: { type: 'string', default: '10' },
    connections: { type: 'string', default: '50' },
    stream: { type: 'boolean', default: false },
    top: { type: 'string', default: '40' },
    /** Run without the profiler (e.g. to watch the gateway with strace or perf). */
    plain: { type: 'boolean', default: false },
    /** Trace the garbage collector instead of profiling: bytes promoted per request. */
    gc: { type: 'boolean', default: false },
    /** Extra Node or V8 flags for the gateway (repeatable), e.g. --node-arg=--minor-mc. */
    'node-arg': { type: 'string', multiple: true, default: [] },
  },
});

interface ProfileNode {
  readonly id: number;
  readonly callFrame: { functionName: string; url: string; lineNumber: number };
  readonly hitCount?: number;
}
interface CpuProfile {
  readonly nodes: readonly ProfileNode[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

function where(url: string): string {
  const modules = url.lastIndexOf('node_modules/');
  if (modules >= 0)
    return url
      .slice(modules + 13)
      .split('/')
      .slice(0, 1)
      .join('/');
  if (url.startsWith('node:')) return 'node internals';
  if (url === '') return '(native/VM)';
  const dist = url.indexOf('/dist/');
  return dist >= 0
    ? url
        .slice(dist + 6)
        .split('/')
        .slice(0, 2)
        .join('/')
    : url;
}

function report(profile: CpuProfile, top: number): string {
  const byNode = new Map<number, ProfileNode>(profile.nodes.map((node) => [node.id, node]));
  const selfMicros = new Map<number, number>();
  profile.samples.forEach((id, index) => {
    selfMicros.set(id, (selfMicros.get(id) ?? 0) + (profile.timeDeltas[index] ?? 0));
  });
  const total = [...selfMicros.values()].reduce((sum, value) => sum + value, 0);
  const byFunction = new Map<string, number>();
  const byPlace = new Map<string, number>();
  for (const [id, micros] of selfMicros) {
    const frame = byNode.get(id)!.callFrame;
    const file = frame.url.replace(/^.*\/(node_modules|dist)\//, '');
    const name = `${frame.functionName || '(anonymous)'}  ${file}:${frame.lineNumber + 1}`;
    byFunction.set(name, (byFunction.get(name) ?? 0) + micros);
    const place = where(frame.url);
    byPlace.set(place, (byPlace.get(place) ?? 0) + micros);
  }
  const lines = (map: Map<string, number>, count: number): string =>
    [...map]
      .sort((a, b) => b[1] - a[1])
      .slice(0, count)
      .map(([name, micros]) => `${((micros / total) * 100).toFixed(1).padStart(5)} %  ${name}`)
      .join('\n');
  return `By place:\n${lines(byPlace, 25)}\n\nBy function (self time):\n${lines(byFunction, top)}\n`;
}

/**
 * CPU per request of each process taking part, and of the whole machine: on a small machine
 * every process shares the cores, so the load generator's, the vendor's, Redis's and
 * Postgres's CPU bound the gateway's throughput as much as its own.
 */
async function cpuPerRequest(
  pids: Record<string, readonly number[]>,
  run: () => Promise<number>,
): Promise<string> {
  const sum = (list: readonly number[]): number =>
    list.reduce((total, pid) => total + cpuMicros(pid), 0);
  const before = Object.fromEntries(Object.entries(pids).map(([name, list]) => [name, sum(list)]));
  const machineBefore = machineTicks();
  const requests = await run();
  const machineAfter = machineTicks();
  const parts = Object.entries(pids).map(
    ([name, list]) => `${name} ${((sum(list) - before[name]!) / requests).toFixed(0)}`,
  );
  const busyTicks = machineAfter.busy - machineBefore.busy;
  const busyShare = busyTicks / (machineAfter.total - machineBefore.total);
  return (
    `CPU µs per request: ${parts.join(', ')}; whole machine ` +
    `${((busyTicks * 10_000) / requests).toFixed(0)} (${(busyShare * 100).toFixed(0)} % busy)`
  );
}

async function main(): Promise<void> {
  const profileDir = mkdtempSync(join(tmpdir(), 'gw-profile-'));
  const mock = await startMock();
  const gcTrace = new GcTrace();
  const gateway = await startGatewayTarget(
    mock.url,
    [
      ...(flags.gc
        ? ['--trace-gc-nvp']
        : flags.plain
          ? []
          : ['--cpu-prof', '--cpu-prof-dir', profileDir]),
      ...flags['node-arg'],
    ],
    flags.gc ? { onOutput: gcTrace.hear } : {},
  );
  try {
    const org = await gwCli<{ api_key: string; app_connection_id: string }>(
      ['seed', '--json', '--wallet', '1000000'],
      gateway.env,
    );
    const spec = {
      url: gateway.url,
      connections: Number(flags.connections),
      durationSeconds: Number(flags.duration),
      headers: { authorization: `Bearer ${org.api_key}` },
      body: JSON.stringify({ ...BENCH_PROMPT, stream: flags.stream }),
      headersFor: productUserHeaders(8),
    };
    await measure({ ...spec, durationSeconds: 1 });
    const redis = redisPid();
    let result!: Awaited<ReturnType<typeof measure>>;
    const cpu = await cpuPerRequest(
      {
        'gateway (all its threads)': [gateway.child.pid!],
        redis: redis ? [redis] : [],
        postgres: postgresPids(),
        'mock vendor': [mock.child.pid!],
        'load generator': [process.pid],
      },
      async () => {
        gcTrace.recording = true;
        result = await measure(spec);
        gcTrace.recording = false;
        return result.requestsPerSecond * spec.durationSeconds;
      },
    );
    process.stdout.write(
      `${Math.round(result.requestsPerSecond)} req/s, mean ${result.meanMs.toFixed(3)} ms, ` +
        `${result.errors} errors\n${cpu}\n`,
    );
    if (flags.gc) {
      const requests = result.requestsPerSecond * spec.durationSeconds;
      process.stdout.write(`GC while the load ran:\n${gcTrace.report(requests)}\n`);
    }
  } finally {
    await stopAndClean([mock, gateway]);
  }
  if (flags.plain || flags.gc) return;
  const file = readdirSync(profileDir).find((name) => name.endsWith('.cpuprofile'));
  if (!file) throw new Error(`no profile written in ${profileDir}`);
  const profile = JSON.parse(readFileSync(join(profileDir, file), 'utf8')) as CpuProfile;
  process.stdout.write(
    `\nProfile: ${join(profileDir, file)}\n\n${report(profile, Number(flags.top))}`,
  );
}

await main();
