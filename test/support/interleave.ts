// Putting one operation between two steps of another on the real Redis and Postgres: a hook
// runs just before a chosen Postgres statement (or just after its answer) or a chosen Lua
// script, once (or every time, for sustained traffic), and awaits a step
// (test/account-rebuild.race.test.ts, test/wallet-adjust-rebuild.race.test.ts,
// test/credits-load.race.test.ts).
import type { DbPool } from '../../src/db/pool.js';
import type { RedisScripts } from '../../src/redis/scripts.js';

export type Step = () => Promise<void>;

/** Runs `step` once, just before the first statement matching `match` reaches Postgres. */
export interface QueryHook {
  readonly match: RegExp;
  /** Only statements whose parameters pass this (one org's, say). */
  readonly values?: (values: readonly unknown[]) => boolean;
  readonly step: Step;
  /** Before every matching statement, not only the first. */
  readonly every?: boolean;
  /** Once the statement's answer is back, before its caller has it (not before it is sent). */
  readonly after?: boolean;
}

/**
 * The real pool, with hooks run before chosen statements (on the pool and on the clients it
 * hands out): how a test puts a settle between two steps of a rebuild.
 */
export function hookedPool(pool: DbPool, hooks: QueryHook[]): DbPool {
  const pending = [...hooks];
  const run = async (after: boolean, text: unknown, values: unknown): Promise<void> => {
    const index = pending.findIndex(
      (hook) =>
        (hook.after ?? false) === after &&
        typeof text === 'string' &&
        hook.match.test(text) &&
        (!hook.values || hook.values(Array.isArray(values) ? values : [])),
    );
    if (index < 0) return;
    const hook = pending[index]!;
    if (!hook.every) pending.splice(index, 1);
    await hook.step();
  };
  const withHooks = <T extends { query: (...args: never[]) => unknown }>(target: T): T =>
    new Proxy(target, {
      get(object, property, receiver) {
        if (property === 'query') {
          return async (...args: unknown[]) => {
            await run(false, args[0], args[1]);
            const answer: unknown = await (object.query as (...a: unknown[]) => unknown).apply(
              object,
              args,
            );
            await run(true, args[0], args[1]);
            return answer;
          };
        }
        if (property === 'connect' && object === (pool as unknown)) {
          return async () => withHooks(await pool.connect());
        }
        const value = Reflect.get(object, property, receiver) as unknown;
        return typeof value === 'function' ? (value as () => unknown).bind(object) : value;
      },
    });
  return withHooks(pool);
}

/**
 * The real scripts, with `step` run once before the first call of a script whose name `which`
 * accepts (for a rebuild: before it installs the account), or before every call.
 */
export function hookedScripts(
  scripts: RedisScripts,
  which: (name: string) => boolean,
  step: Step | undefined,
  every = false,
): RedisScripts {
  let pendingStep = step;
  const hooked: Record<string, unknown> = { ...scripts };
  for (const [name, script] of Object.entries(scripts)) {
    if (!which(name)) continue;
    hooked[name] = async (...args: unknown[]) => {
      const run = pendingStep;
      if (!every) pendingStep = undefined;
      await run?.();
      return (script as (...a: unknown[]) => unknown)(...args);
    };
  }
  return hooked as unknown as RedisScripts;
}
