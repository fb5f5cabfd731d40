// gw mock-vendors: serves both mock vendors on one port until SIGINT/SIGTERM.
// Prints {"url":…,"port":…} on one line once listening (bench/targets.ts reads the port).
import { startMockVendors, type MockVendorOptions } from '../mock-vendors/server.js';
import { parseFlags, UsageError } from './output.js';
import { cliIo } from './io.js';

export const mockVendorsHelp = `gw mock-vendors [--port N] [--host H] [--latency-ms N] [--tokens-per-second N]
                [--output-tokens N] [--fault-rate R]

Serves the built-in mock vendors on one port: vendor_a (POST /v1/messages,
/v1/messages/count_tokens) and vendor_b (POST /v1/chat/completions); GET /v1/models
answers in either format. See docs/mock-vendors.md.

  --port N               port to listen on (default 0: a free port, printed on start)
  --host H               address to bind (default 127.0.0.1)
  --latency-ms N         delay before the first byte of each completion (default 0)
  --tokens-per-second N  stream pacing (default 0: as fast as possible)
  --output-tokens N      output tokens when the request does not ask (default 16)
  --fault-rate R         share 0..1 of completions answered with a server error (default 0)`;

function integerFlag(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value)) throw new UsageError(`--${flag} must be a non-negative integer`);
  return Number(value);
}

function numberFlag(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  const parsed = Number(value);
  if (value.trim() === '' || !Number.isFinite(parsed) || parsed < 0)
    throw new UsageError(`--${flag} must be a non-negative number`);
  return parsed;
}

export async function mockVendorsCommand(argv: string[]): Promise<void> {
  const { values } = parseFlags(argv, {
    help: { type: 'boolean', short: 'h' },
    port: { type: 'string' },
    host: { type: 'string' },
    'latency-ms': { type: 'string' },
    'tokens-per-second': { type: 'string' },
    'output-tokens': { type: 'string' },
    'fault-rate': { type: 'string' },
  });
  if (values.help) {
    cliIo().write('stdout', `${mockVendorsHelp}\n`);
    return;
  }
  const faultRate = numberFlag(values['fault-rate'], 'fault-rate');
  if (faultRate !== undefined && faultRate > 1) throw new UsageError('--fault-rate must be 0..1');
  const options: MockVendorOptions = {
    host: values.host,
    port: integerFlag(values.port, 'port'),
    latencyMs: integerFlag(values['latency-ms'], 'latency-ms'),
    tokensPerSecond: numberFlag(values['tokens-per-second'], 'tokens-per-second'),
    defaultOutputTokens: integerFlag(values['output-tokens'], 'output-tokens'),
    faultRate,
  };
  const mock = await startMockVendors(options);
  cliIo().write('stdout', `${JSON.stringify({ url: mock.url, port: mock.port })}\n`);

  // Serve until a signal; then stop accepting, let answers in flight end (bounded), exit 0.
  await new Promise<void>((resolve) => {
    const stop = (): void => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve();
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
  await mock.close();
}
