// Starts gateways and runs the CLI for the tests. Both run in the test's own process by
// default — the real code over the real Redis and Postgres, without a node start-up and module
// load per call — and as real processes where the process boundary is what a test is about
// (signals, crashes, the pure-JS fallback, the `gw` binary itself).
import { spawn, type ChildProcess, execFile } from 'node:child_process';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { pino } from 'pino';
import type { GatewayOptions, RunningGateway } from '../../src/gateway.js';
import { withCliIo } from '../../src/cli/io.js';
import { runCli as runCliInProcess } from '../../src/cli/main.js';
import { loadConfig } from '../../src/config.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const execFileAsync = promisify(execFile);

export interface GatewayProcess {
  readonly url: string;
  readonly port: number;
  /** Everything the gateway logged so far (JSON lines). */
  output(): string;
  /** Stops it (a process: sends the signal) and resolves with the exit code (0 in-process). */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

export interface SpawnedGateway extends GatewayProcess {
  readonly child: ChildProcess;
}

/**
 * A gateway in this process: the compiled gateway (its worker threads load from dist/), with
 * its log captured for `output()`.
 */
export async function startGateway(
  env: Record<string, string>,
  options: GatewayOptions = {},
): Promise<GatewayProcess> {
  const { startGateway: start } = (await import(
    new URL('../../dist/src/gateway.js', import.meta.url).href
  )) as { startGateway: typeof import('../../src/gateway.js').startGateway };
  const config = loadConfig({ ...process.env, ...env, LOG_LEVEL: env.LOG_LEVEL ?? 'info' });
  let output = '';
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      output += chunk.toString();
      done();
    },
  });
  const logger = pino({ name: 'gw', level: config.LOG_LEVEL }, sink);
  const gateway: RunningGateway = await start(config, logger, options);
  let stopped: Promise<number | null> | undefined;
  return {
    url: `http://127.0.0.1:${gateway.port}`,
    port: gateway.port,
    output: () => output,
    stop(signal) {
      if (signal === 'SIGKILL') {
        throw new Error('an in-process gateway cannot be killed: use startGatewayProcess');
      }
      stopped ??= gateway.stop().then(() => 0);
      return stopped;
    },
  };
}

/** A real `node dist/src/main.js` process. */
export async function startGatewayProcess(env: Record<string, string>): Promise<SpawnedGateway> {
  const child = spawn(process.execPath, ['dist/src/main.js'], {
    cwd: root,
    env: { ...process.env, ...env, LOG_LEVEL: env.LOG_LEVEL ?? 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => resolve(code)),
  );
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL'); // never leave a half-started gateway behind
      reject(new Error(`gateway did not start:\n${output}`));
    }, 60_000); // a loaded 2-core CI machine can take tens of seconds to start two workers
    const onData = (chunk: Buffer): void => {
      output += chunk.toString();
      const match = /"port":(\d+)[^\n]*"msg":"gw listening"/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve(Number(match[1]));
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`gateway exited with ${code} before listening:\n${output}`));
    });
  });
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    child,
    output: () => output,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      child.kill(signal);
      return exited;
    },
  };
}

export interface CliResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * What a `gw` command run in-process reads: `stdin`, piped to it (empty when not given), or
 * `typed`, the answers typed at a terminal, one per prompt.
 */
export type CliInput = { readonly stdin?: string } | { readonly typed: readonly string[] };

/** Runs a `gw` command in this process, with its own environment, input and output. */
export async function runCli(
  args: string[],
  env: Record<string, string>,
  input: CliInput = {},
): Promise<CliResult> {
  let stdout = '';
  let stderr = '';
  const typed = 'typed' in input ? [...input.typed] : null;
  const code = await withCliIo(
    {
      env: { ...process.env, ...env },
      write: (stream, text) => {
        if (stream === 'stdout') stdout += text;
        else stderr += text;
      },
      inputIsTerminal: typed !== null,
      readInput: () => Promise.resolve('stdin' in input ? (input.stdin ?? '') : ''),
      askSecret: (prompt) => {
        stderr += prompt;
        const answer = typed?.shift();
        return answer === undefined
          ? Promise.reject(new Error(`no answer typed for ${prompt}`))
          : Promise.resolve(answer);
      },
    },
    () => runCliInProcess(args),
  );
  return { code, stdout, stderr };
}

/** Runs the real `gw` binary (bin/gw.js) as a user would, with `stdin` piped to it if given. */
export async function runCliProcess(
  args: string[],
  env: Record<string, string>,
  stdin?: string,
): Promise<CliResult> {
  try {
    const running = execFileAsync(process.execPath, ['bin/gw.js', ...args], {
      cwd: root,
      env: { ...process.env, ...env },
    });
    if (stdin !== undefined) running.child.stdin?.end(stdin);
    const { stdout, stderr } = await running;
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failure = error as { code?: number; stdout?: string; stderr?: string };
    return { code: failure.code ?? 1, stdout: failure.stdout ?? '', stderr: failure.stderr ?? '' };
  }
}

export async function runCliJson<T>(
  args: string[],
  env: Record<string, string>,
  input: CliInput = {},
): Promise<T> {
  const result = await runCli(args, env, input);
  if (result.code !== 0)
    throw new Error(`gw ${args.join(' ')} failed (${result.code}): ${result.stderr}`);
  return JSON.parse(result.stdout) as T;
}

/** `gw cap set --scope product_user` for one user of an app (made if new), with more flags. */
export function setProductUserCap(
  env: Record<string, string>,
  appId: string,
  externalUserId: string,
  amount: string,
  flags: readonly string[] = [],
): Promise<unknown> {
  return runCliJson(
    [
      ...['cap', 'set', '--scope', 'product_user', '--app-id', appId],
      ...['--external-user-id', externalUserId, '--amount', amount, ...flags],
    ],
    env,
  );
}

export interface SeededOrg {
  readonly org_id: string;
  readonly app_id: string;
  readonly app_connection_id: string;
  readonly api_key: string;
  readonly service_key: string;
  readonly models: string[];
}

export function seed(env: Record<string, string>, extraArgs: string[] = []): Promise<SeededOrg> {
  return runCliJson<SeededOrg>(['seed', '--json', ...extraArgs], env);
}

/** `gw api-key create` for a connection (optionally with a model policy such as 'vendor_a/*'). */
export function createApiKey(
  env: Record<string, string>,
  appConnectionId: string,
  modelPolicy?: string,
): Promise<{ id: string; key: string }> {
  const policy = modelPolicy === undefined ? [] : ['--model-policy', modelPolicy];
  return runCliJson(['api-key', 'create', '--app-connection-id', appConnectionId, ...policy], env);
}

/** `gw api-key revoke`: the key as the dashboard API answers it. */
export function revokeApiKey(
  env: Record<string, string>,
  id: string,
): Promise<{ id: string; status: string; revoked_at: string | null }> {
  return runCliJson(['api-key', 'revoke', '--id', id], env);
}

/** The URL of a gateway's /metrics listener (its port is logged with "gw listening"). */
export function metricsUrl(gateway: GatewayProcess): string {
  const port = /"metricsPort":(\d+)[^\n]*"msg":"gw listening"/.exec(gateway.output())?.[1];
  if (port === undefined) throw new Error('the gateway logged no metrics port');
  return `http://127.0.0.1:${port}/metrics`;
}
