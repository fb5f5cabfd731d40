// Lua scripts: one file each in lua/, `--#include name` pulling fragments from lua/includes/.
// Each script's KEYS and ARGV are named once, in scriptSpecs, in the order of its header.
// Each is registered with ioredis defineCommand under a name that carries a hash of its
// source, so two deployed versions sharing one Redis never call each other's script.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { isCluster, masters, whenReady, type RedisClient } from './connect.js';

const luaDir = fileURLToPath(new URL('../../../lua/', import.meta.url));
const luaDirFromSource = fileURLToPath(new URL('../../lua/', import.meta.url));

function readLua(relativePath: string): string {
  for (const dir of [luaDirFromSource, luaDir]) {
    try {
      return readFileSync(dir + relativePath, 'utf8');
    } catch {
      // try the next location (running from src/ or from dist/src/)
    }
  }
  throw new Error(`Lua script not found: ${relativePath}`);
}

const includeLine = /^--#include ([\w-]+)[ \t]*$/gm;

/**
 * Inlines `--#include name` lines (lua/includes/<name>.lua) recursively: an include may
 * include others; each is inlined once, at its first mention (later mentions are dropped, as
 * BullMQ's loader does), and a cycle is an error.
 */
export function expandIncludes(
  source: string,
  read: (relativePath: string) => string,
  inlined = new Set<string>(),
  chain: readonly string[] = [],
): string {
  return source.replace(includeLine, (_line, name: string) => {
    if (chain.includes(name)) {
      throw new Error(`Lua include cycle: ${[...chain, name].join(' -> ')}`);
    }
    if (inlined.has(name)) return '';
    inlined.add(name);
    return expandIncludes(read(`includes/${name}.lua`), read, inlined, [...chain, name]);
  });
}

/** The script's source with its includes inlined. */
export function loadLuaSource(file: string): string {
  return expandIncludes(readLua(`${file}.lua`), readLua);
}

/** A script's file and the names of its KEYS and ARGV, in the order of its header block
 * (test/lua-bindings.test.ts checks the two agree). `rest`: the name of trailing ARGV that
 * come as a list (the header's `ARGV[n..]`). */
interface ScriptSpec {
  readonly file: string;
  readonly keys: readonly string[];
  readonly args: readonly string[];
  readonly rest?: string;
}

/** KEYS[1..8] of reserve.lua, settle.lua and release.lua: every account a request holds on. */
const HOLD_ACCOUNT_KEYS = [
  'wallet',
  'wallet_expiries',
  'org_cap',
  'org_cap_expiries',
  'conn_cap',
  'conn_cap_expiries',
  'user_spend',
  'user_spend_expiries',
] as const;

/** KEYS[1..10] of reserve.lua and settle.lua: every account a request can touch. */
const REQUEST_ACCOUNT_KEYS = [...HOLD_ACCOUNT_KEYS, 'user_credits', 'user_grants'] as const;

/** ARGV[1..7] of account-rebuild.lua, which account-rebuild-user.lua begins with. */
const ACCOUNT_REBUILD_ARGS = [
  'field',
  'amount_nano',
  'expire_at_ms',
  'missed_at_cut',
  'generation',
  'listing_field',
  'listing',
] as const;

export const scriptSpecs = {
  reserve: {
    file: 'reserve',
    keys: [
      ...REQUEST_ACCOUNT_KEYS,
      'cred_cooldowns',
      'cred_rotation',
      'in_flight',
      'key_rate',
      'user_rate',
      'previous_spend',
      'previous_spend_expiries',
    ],
    args: [
      'request_id',
      'amount_nano',
      'now_ms',
      'expires_at_ms',
      'wallet_pays',
      'org_cap_nano',
      'conn_cap_nano',
      'user_cap_nano',
      'user_mode',
      'credentials',
      'byok_only',
      'draft',
      'key_rpm',
      'user_rpm',
    ],
  },
  failover: {
    file: 'failover',
    keys: [
      'wallet',
      'wallet_expiries',
      'cred_cooldowns',
      'cred_rotation',
      'usage_stream',
      'in_flight',
    ],
    args: [
      'request_id',
      'failed_credential_id',
      'cooldown_until_ms',
      'credentials',
      'byok_only',
      'amount_nano',
      'now_ms',
      'expires_at_ms',
      'org_id',
      'failure',
      'upstream_status',
    ],
  },
  release: {
    file: 'release',
    keys: [...HOLD_ACCOUNT_KEYS, 'in_flight', 'key_rate', 'user_rate'],
    args: ['request_id', 'held_nano', 'key_rated', 'user_rated'],
  },
  holdRenew: {
    file: 'hold-renew',
    keys: [
      'wallet_expiries',
      'org_cap_expiries',
      'conn_cap_expiries',
      'user_spend_expiries',
      'in_flight',
      'user_credits',
      'draining_for',
    ],
    args: ['request_id', 'held_nano', 'expires_at_ms'],
  },
  settle: {
    file: 'settle',
    keys: [
      ...REQUEST_ACCOUNT_KEYS,
      'settled_marker',
      'usage_stream',
      'in_flight',
      'rebuilds',
      'draining_for',
    ],
    args: [
      'request_id',
      'cost_nano',
      'wallet_cost_nano',
      'held_nano',
      'marker_ttl_s',
      'now_ms',
      'user_cap_nano',
      'user_mode',
      'uses_org_cap',
      'uses_conn_cap',
      'org_cap_nano',
      'conn_cap_nano',
      'user_period',
      'cap_period',
      'admitted_ms',
    ],
    rest: 'record_fields',
  },
  rateLimit: {
    file: 'rate-limit',
    keys: ['bucket', 'counted'],
    args: ['limit', 'now_ms', 'counted_ttl_ms'],
  },
  accountLoad: {
    file: 'account-load',
    keys: ['account', 'expiries'],
    args: ['field', 'amount_nano', 'expire_at_ms'],
  },
  accountRebuild: {
    file: 'account-rebuild',
    keys: ['account', 'expiries', 'rebuilds'],
    args: ACCOUNT_REBUILD_ARGS,
  },
  accountRebuildUser: {
    file: 'account-rebuild-user',
    keys: ['account', 'expiries', 'rebuilds', 'user_credits', 'user_grants'],
    args: [...ACCOUNT_REBUILD_ARGS, 'ttl_ms'],
    rest: 'grants',
  },
  creditsLoad: {
    file: 'credits-load',
    keys: ['user_credits', 'user_grants'],
    args: ['ttl_ms'],
    rest: 'grants',
  },
  creditsChange: {
    file: 'credits-change',
    keys: [
      'user_credits',
      'user_grants',
      'user_spend',
      'user_spend_expiries',
      'previous_spend',
      'previous_spend_expiries',
      'draining_for',
      'next_spend',
      'next_spend_expiries',
    ],
    args: ['action', 'grant_id', 'amount_nano', 'expires_at_ms', 'ttl_ms', 'keep_held'],
  },
  walletTopUpPending: {
    file: 'wallet-topup-pending',
    keys: ['wallet', 'pending'],
    args: ['transaction_id'],
  },
  walletTopUpApply: {
    file: 'wallet-topup-apply',
    keys: ['wallet', 'pending'],
    args: ['transaction_id', 'amount_nano'],
  },
  accountCorrect: {
    file: 'account-correct',
    keys: ['account'],
    args: ['field', 'delta_nano', 'generation'],
  },
  cacheFill: {
    file: 'cache-fill',
    keys: ['value', 'generation'],
    args: ['expected_generation', 'value', 'ttl_s'],
  },
  oauthTakeCode: {
    file: 'oauth-take-code',
    keys: ['code', 'used'],
    args: ['used_ttl_ms'],
  },
  sweepLock: {
    file: 'sweep-lock',
    keys: ['lock'],
    args: ['token', 'ttl_ms'],
  },
} as const satisfies Record<string, ScriptSpec>;

export type ScriptName = keyof typeof scriptSpecs;
type ScriptArg = string | number;
type Spec<N extends ScriptName> = (typeof scriptSpecs)[N];
/** The named KEYS of a script. */
export type ScriptKeys<N extends ScriptName> = Readonly<Record<Spec<N>['keys'][number], string>>;
/** The named ARGV of a script (its `rest` list, if any, goes separately). */
export type ScriptArgs<N extends ScriptName> = Readonly<Record<Spec<N>['args'][number], ScriptArg>>;
export type ScriptCall<N extends ScriptName> = (
  keys: ScriptKeys<N>,
  args: ScriptArgs<N>,
  rest?: readonly ScriptArg[],
) => Promise<unknown>;
export type RedisScripts = { readonly [N in ScriptName]: ScriptCall<N> };

/**
 * Coalesces the socket writes of script calls without ioredis's auto-pipelining, whose
 * Pipeline per batch costs ~8 µs of CPU per call and defers even a lone call to the next loop
 * turn (~80 µs per round trip on a 2-core VM). Called just before a call is written: a call
 * made while the connection has no reply outstanding is written at once. While replies are
 * outstanding (the client's own queue of sent commands is not empty), the socket is corked on
 * the first call of a loop turn and uncorked at the end of it (setImmediate), so the calls
 * that many requests issue in one turn leave in one write. Measured with 50 calls in flight:
 * ~12 µs of CPU per call, against ~20 µs with auto-pipelining. The clients that run scripts
 * therefore do not auto-pipeline. On a cluster the calls go out as they come: each goes to its
 * slot's node, and the client does not say which socket that is before writing.
 */
function writeCoalescer(redis: RedisClient): () => void {
  if (isCluster(redis)) return () => undefined;
  let corked = false;
  return () => {
    if (corked || redis.status !== 'ready' || redis.commandQueue.length === 0) return;
    const socket = redis.stream; // uncork the socket that was corked, even after a reconnect
    socket.cork();
    corked = true;
    setImmediate(() => {
      corked = false;
      socket.uncork();
    });
  };
}

/** Defines every script on the client and returns callers that take named KEYS and ARGV. */
export function defineScripts(redis: RedisClient): RedisScripts {
  const callers: Record<string, ScriptCall<ScriptName>> = {};
  const commands = redis as unknown as Record<string, (...args: ScriptArg[]) => Promise<unknown>>;
  const beforeWrite = writeCoalescer(redis);
  for (const [name, spec] of Object.entries(scriptSpecs) as Array<[ScriptName, ScriptSpec]>) {
    const lua = loadLuaSource(spec.file);
    const version = createHash('sha1').update(lua).digest('hex').slice(0, 10);
    const commandName = `gw_${name}_${version}`;
    redis.defineCommand(commandName, { numberOfKeys: spec.keys.length, lua });
    const keyNames = spec.keys;
    const argNames = spec.args;
    callers[name] = (keys, args, rest = []) => {
      const named = keys as Readonly<Record<string, string>>;
      const values = args as Readonly<Record<string, ScriptArg>>;
      const ordered: ScriptArg[] = [];
      for (const key of keyNames) ordered.push(named[key]!);
      for (const arg of argNames) ordered.push(values[arg]!);
      for (const arg of rest) ordered.push(arg);
      beforeWrite();
      return commands[commandName]!.call(redis, ...ordered);
    };
  }
  return Object.freeze(callers) as unknown as RedisScripts;
}

/**
 * Loads every script into Redis now (SCRIPT LOAD, on every master of a cluster), so readiness
 * means scripts are there. A master that joins later gets them from its first call (ioredis
 * sends the source when EVALSHA meets NOSCRIPT).
 */
export async function preloadScripts(redis: RedisClient): Promise<void> {
  if (isCluster(redis)) await whenReady(redis); // its masters are known once it is ready
  for (const spec of Object.values(scriptSpecs)) {
    const source = loadLuaSource(spec.file);
    for (const node of masters(redis)) await node.script('LOAD', source);
  }
}
