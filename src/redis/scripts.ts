// Lua scripts: one file each in lua/, `--#include name` pulling fragments from lua/includes/.
// Each is registered with ioredis defineCommand under a name that carries a hash of its
// source, so two deployed versions sharing one Redis never call each other's script.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Redis } from 'ioredis';

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

/** The script's source with its includes inlined. */
export function loadLuaSource(name: string): string {
  return readLua(`${name}.lua`).replace(/^--#include ([\w-]+)$/gm, (_line, include: string) =>
    readLua(`includes/${include}.lua`),
  );
}

const scriptDefinitions = {
  reserve: { file: 'reserve', keys: 12 },
  failover: { file: 'failover', keys: 4 },
  settle: { file: 'settle', keys: 12 },
  accountLoad: { file: 'account-load', keys: 1 },
  creditsLoad: { file: 'credits-load', keys: 2 },
  creditsChange: { file: 'credits-change', keys: 2 },
  walletAdjust: { file: 'wallet-adjust', keys: 1 },
} as const;

export type ScriptName = keyof typeof scriptDefinitions;
type ScriptArg = string | number;
export type ScriptCall = (keys: readonly string[], args: readonly ScriptArg[]) => Promise<unknown>;
export type RedisScripts = Readonly<Record<ScriptName, ScriptCall>>;

/**
 * Sends a call at once when no other script call is in flight, and through the client's
 * auto-pipelining otherwise. Auto-pipelining defers every command to the next event-loop turn
 * so that calls issued together share one socket write: the right trade under load, but it
 * costs a lone request ~80 µs per round trip on a 2-core VM (bench/micro/reserve-settle).
 * ioredis reads `options.enableAutoPipelining` on every call, synchronously, so switching it
 * off for one call is safe; replies still match the order commands were written in.
 */
function adaptivePipelining(redis: Redis): (send: () => Promise<unknown>) => Promise<unknown> {
  if (!redis.options.enableAutoPipelining) return (send) => send();
  let inFlight = 0;
  const settled = (): void => {
    inFlight -= 1;
  };
  return (send) => {
    let pending: Promise<unknown>;
    if (inFlight === 0) {
      redis.options.enableAutoPipelining = false;
      try {
        pending = send();
      } finally {
        redis.options.enableAutoPipelining = true;
      }
    } else {
      pending = send();
    }
    inFlight += 1;
    pending.then(settled, settled);
    return pending;
  };
}

/** Defines every script on the client and returns typed callers. */
export function defineScripts(redis: Redis): RedisScripts {
  const callers = {} as Record<ScriptName, ScriptCall>;
  const commands = redis as unknown as Record<string, (...args: ScriptArg[]) => Promise<unknown>>;
  const dispatch = adaptivePipelining(redis);
  for (const [name, definition] of Object.entries(scriptDefinitions) as Array<
    [ScriptName, (typeof scriptDefinitions)[ScriptName]]
  >) {
    const lua = loadLuaSource(definition.file);
    const version = createHash('sha1').update(lua).digest('hex').slice(0, 10);
    const commandName = `gw_${name}_${version}`;
    redis.defineCommand(commandName, { numberOfKeys: definition.keys, lua });
    callers[name] = (keys, args) => {
      if (keys.length !== definition.keys) {
        throw new Error(`script ${name} takes ${definition.keys} keys, got ${keys.length}`);
      }
      return dispatch(() => commands[commandName]!.call(redis, ...keys, ...args));
    };
  }
  return Object.freeze(callers);
}

/** Loads every script into Redis now (SCRIPT LOAD), so readiness means scripts are there. */
export async function preloadScripts(redis: Redis): Promise<void> {
  for (const definition of Object.values(scriptDefinitions)) {
    await redis.script('LOAD', loadLuaSource(definition.file));
  }
}
