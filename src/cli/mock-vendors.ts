// gw mock-vendors: serves both mock vendors on one port until SIGINT/SIGTERM.
import { startMockVendors } from '../mock-vendors/server.js';
import { parseFlags, UsageError } from './output.js';

const integer = (value: string | undefined, flag: string): number | undefined => {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value)) throw new UsageError(`--${flag} must be a non-negative integer`);
  return Number(value);
};

export async function mockVendorsCommand(argv: string[]): Promise<void> {
  const { values } = parseFlags(argv, {
    port: { type: 'string' },
    host: { type: 'string' },
    'latency-ms': { type: 'string' },
    'tokens-per-second': { type: 'string' },
    'output-tokens': { type: 'string' },
  });
  const port = integer(values.port, 'port');
  const latencyMs = integer(values['latency-ms'], 'latency-ms');
  const tokensPerSecond = integer(values['tokens-per-second'], 'tokens-per-second');
  const defaultOutputTokens = integer(values['output-tokens'], 'output-tokens');
  const mock = await startMockVendors({
    ...(values.host !== undefined && { host: values.host }),
    ...(port !== undefined && { port }),
    ...(latencyMs !== undefined && { latencyMs }),
    ...(tokensPerSecond !== undefined && { tokensPerSecond }),
    ...(defaultOutputTokens !== undefined && { defaultOutputTokens }),
  });
  process.stdout.write(`${JSON.stringify({ url: mock.url, port: mock.port })}\n`);
  const stop = (): void => {
    void mock.close().then(() => process.exit(0));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}
