// CLI output and argument helpers: JSON on stdout, errors as JSON on stderr with exit code 2.
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { cliIo } from './io.js';

export class UsageError extends Error {
  override readonly name = 'UsageError';
}

export function printJson(value: unknown): void {
  cliIo().write('stdout', `${JSON.stringify(value, null, 2)}\n`);
}

export function parseFlags<Options extends NonNullable<ParseArgsConfig['options']>>(
  argv: string[],
  options: Options,
): ReturnType<typeof parseArgs<{ args: string[]; options: Options; allowPositionals: true }>> {
  try {
    return parseArgs({ args: argv, options, allowPositionals: true, strict: true });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

export function requireFlag(value: string | undefined, name: string): string {
  if (value === undefined || value.trim() === '') throw new UsageError(`--${name} is required`);
  return value;
}
