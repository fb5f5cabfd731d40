// CLI output and argument helpers: JSON on stdout, errors as JSON on stderr with exit code 2.
import { parseArgs, type ParseArgsConfig } from 'node:util';
import type { Config } from '../config.js';
import { parseMasterKeys, SecretBoxError, type SecretBox } from '../credentials/secret-box.js';
import { isGwError, type ErrorCode, type GwError } from '../errors.js';
import { AmountError, AmountRangeError, parseAmountToNano } from '../money.js';
import { cliIo } from './io.js';

/** A refused command: printed as `{"error":{"code","message"}}`, the HTTP error shape. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
  constructor(
    message: string,
    /** A code of the one catalogue (src/errors.ts), as the HTTP API would answer. */
    readonly code: ErrorCode = 'gw_invalid_request',
  ) {
    super(message);
  }
}

/**
 * A field or option name as the flag a user types: `model_policy` or `latencyMs` becomes
 * `--model-policy`, `--latency-ms`. The one spelling of the CLI's errors that name a flag.
 */
export function flagName(field: string): string {
  return `--${field.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`).replaceAll('_', '-')}`;
}

/**
 * A service's answer, or its refusal as the command's error. A refusal that starts with an API
 * field of `fieldFlags` (`model_policy: …`, `redirect_uris.1: …`) names the command's flag
 * instead: `fieldFlags` maps the field to the flag (`{ redirect_uris: 'redirect_uri' }`, spelt
 * by flagName), and an item of a repeated flag is counted from 1 (`--redirect-uri #2: …`).
 */
export function orUsageError<T>(
  result: T | GwError,
  fieldFlags: Readonly<Record<string, string>> = {},
): T {
  if (isGwError(result))
    throw new UsageError(withFlagNames(result.message, fieldFlags), result.code);
  return result;
}

/** A refusal's message with its leading API field of `fieldFlags` named as the flag (above). */
export function withFlagNames(
  message: string,
  fieldFlags: Readonly<Record<string, string>>,
): string {
  const field = /^([a-z_]+)(?:\.(\d+))?: /.exec(message);
  const flag = field && Object.hasOwn(fieldFlags, field[1]!) ? fieldFlags[field[1]!] : undefined;
  if (!field || flag === undefined) return message;
  const item = field[2] === undefined ? '' : ` #${Number(field[2]) + 1}`;
  return `${flagName(flag)}${item}: ${message.slice(field[0].length)}`;
}

/** The credential master keys of the configuration; a bad one is the command's error. */
export function cliMasterKeys(config: Config): SecretBox | undefined {
  try {
    return parseMasterKeys(
      config.CREDENTIALS_MASTER_KEY,
      config.CREDENTIALS_MASTER_KEY_ID,
      config.CREDENTIALS_PREVIOUS_KEYS,
    );
  } catch (error) {
    if (error instanceof SecretBoxError) throw new UsageError(error.message);
    throw error;
  }
}

export function printJson(value: unknown): void {
  cliIo().write('stdout', `${JSON.stringify(value, null, 2)}\n`);
}

/**
 * What a list command prints: the dashboard API's page of the same objects, every row on it
 * (the CLI reads them all, so there is never a next page).
 */
export function listPage<Row>(rows: readonly Row[]): {
  data: readonly Row[];
  next_cursor: null;
} {
  return { data: rows, next_cursor: null };
}

/**
 * A command's `--flags` (after its action). Anything else is refused, not ignored: a value
 * without its flag, or a flag copied with the `[…]` a usage line marks optional ones with,
 * would otherwise leave its setting at the default without a word. A flag that takes one value
 * given twice is refused too (`--grace-seconds 0 … --grace-seconds 86400`: the last one won,
 * silently), as a query parameter given twice is.
 */
export function parseFlags<Options extends NonNullable<ParseArgsConfig['options']>>(
  argv: string[],
  options: Options,
): ReturnType<typeof parseArgs<{ args: string[]; options: Options; allowPositionals: true }>> {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options, allowPositionals: true, strict: true, tokens: true });
  } catch (error) {
    throw new UsageError(flagProblem(argv, options) ?? (error as Error).message);
  }
  const repeated = repeatedFlag(parsed.tokens, options);
  if (repeated !== undefined) {
    throw new UsageError(`--${repeated} is given twice: give it once, with the value you mean`);
  }
  const stray = parsed.tokens.findIndex((token) => token.kind === 'positional');
  if (stray !== -1) {
    throw new UsageError(
      `unexpected argument ${strayWord(parsed.tokens, stray, options)}: this command takes only --flags (see gw --help; [ ] in a usage line marks an optional flag, not text to type)`,
    );
  }
  return parsed;
}

type FlagToken = { readonly kind: string; readonly name?: string; readonly value?: string };

/**
 * Where the stray word `tokens[stray]` stands: a usage line's brackets copied with it are named
 * (`"[--grace-seconds"`, `"0]"`); any other word is never repeated, as it may be a secret given
 * to a flag that takes none (`--secret-stdin sk-…`), so the flag before it is named instead
 * (decision 494).
 */
function strayWord(
  tokens: readonly FlagToken[],
  stray: number,
  options: NonNullable<ParseArgsConfig['options']>,
): string {
  const word = tokens[stray]!.value ?? '';
  if (word.startsWith('[') || word.endsWith(']')) return JSON.stringify(word.slice(0, 64));
  const before = tokens[stray - 1];
  if (before === undefined) return 'before the flags';
  if (before.kind !== 'option' || before.name === undefined) return 'after --';
  return options[before.name]?.type === 'boolean'
    ? `after --${before.name}, which takes no value`
    : `after --${before.name}'s value`;
}

/**
 * Why parseArgs refused `argv`, in gw's words (decision 467): node's own messages speak of
 * positional arguments and option arguments, and suggest `--amount=-XYZ` for `--amount -5`.
 * Never repeats a value (it may be a secret). Undefined: keep node's message.
 */
function flagProblem(
  argv: readonly string[],
  options: NonNullable<ParseArgsConfig['options']>,
): string | undefined {
  const names = Object.keys(options);
  const takes = `this command takes ${names.map((name) => `--${name}`).join(', ')}; see gw --help`;
  for (let index = 0; index < argv.length; index += 1) {
    const arg = argv[index]!;
    if (arg === '--') return undefined;
    if (!arg.startsWith('-') || arg === '-') continue;
    if (!arg.startsWith('--')) {
      return `unknown flag ${arg.slice(0, 2)}: flags are written --name (${takes})`;
    }
    const equals = arg.indexOf('=');
    const name = arg.slice(2, equals === -1 ? undefined : equals);
    const option = options[name];
    if (option === undefined) {
      const near = nearestName(name, names);
      return `unknown flag --${name.slice(0, 64)}${near === undefined ? '' : `: did you mean --${near}?`} (${takes})`;
    }
    if (option.type === 'boolean') {
      if (equals !== -1) return `--${name} takes no value`;
      continue;
    }
    if (equals !== -1) continue;
    const value = argv[index + 1];
    if (value === undefined) return `--${name} needs a value`;
    if (value.startsWith('-')) {
      return `--${name} needs a value: the word after it starts with "-", so it is read as a flag (a value that starts with "-" is written --${name}=-…)`;
    }
    index += 1;
  }
  return undefined;
}

/** The known name a mistyped one most likely meant: one it starts, or within two edits. */
function nearestName(typed: string, names: readonly string[]): string | undefined {
  let best: { name: string; distance: number } | undefined;
  for (const name of names) {
    const distance = name.startsWith(typed) ? 1 : editDistance(typed, name);
    if (distance <= 2 && (best === undefined || distance < best.distance))
      best = { name, distance };
  }
  return best?.name;
}

/** Levenshtein distance: the insertions, deletions and substitutions from one text to another. */
function editDistance(from: string, to: string): number {
  let previous = Array.from({ length: to.length + 1 }, (_, index) => index);
  for (let i = 1; i <= from.length; i += 1) {
    const current = [i];
    for (let j = 1; j <= to.length; j += 1) {
      const substitution = previous[j - 1]! + (from[i - 1] === to[j - 1] ? 0 : 1);
      current.push(Math.min(previous[j]! + 1, current[j - 1]! + 1, substitution));
    }
    previous = current;
  }
  return previous[to.length]!;
}

/** The first flag that takes one value but appears twice (`--name a --name=b`), if any. */
function repeatedFlag(
  tokens: readonly { readonly kind: string; readonly name?: string }[],
  options: NonNullable<ParseArgsConfig['options']>,
): string | undefined {
  const seen = new Set<string>();
  for (const token of tokens) {
    if (token.kind !== 'option' || token.name === undefined) continue;
    if (options[token.name]?.multiple === true) continue;
    if (seen.has(token.name)) return token.name;
    seen.add(token.name);
  }
  return undefined;
}

export function requireFlag(value: string | undefined, name: string): string {
  if (value === undefined || value.trim() === '') throw new UsageError(`--${name} is required`);
  return value;
}

/** An amount flag's value in nano-units; a refusal names the flag (`--wallet: must be …`). */
export function amountFlag(text: string, name: string): bigint {
  try {
    return parseAmountToNano(text);
  } catch (error) {
    if (error instanceof AmountRangeError)
      throw new AmountRangeError(`--${name}: ${error.message}`);
    if (error instanceof AmountError) throw new AmountError(`--${name}: ${error.message}`);
    throw error;
  }
}

/** A comma-separated flag (`--model-policy a,b`) as its trimmed, non-empty items (absent: undefined). */
export function listFlag(value: string | undefined): string[] | undefined {
  return value
    ?.split(',')
    .map((item) => item.trim())
    .filter(Boolean);
}

/** `--grace-seconds` of a rotation: whole seconds from 0 to `maxSeconds` (absent: the default). */
export function graceSecondsFlag(
  value: string | undefined,
  defaultSeconds: number,
  maxSeconds: number,
): number {
  const grace = Number(value ?? defaultSeconds);
  if (!Number.isInteger(grace) || grace < 0 || grace > maxSeconds) {
    throw new UsageError(`--grace-seconds must be a whole number from 0 to ${maxSeconds}`);
  }
  return grace;
}
