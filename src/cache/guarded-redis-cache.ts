// The shared (Redis) layer of a cache whose fills must not undo an invalidation. Each entry has
// a generation counter next to it (same hash tag, so one script touches one slot). A reader
// takes the generation together with the value; after reading Postgres it fills through
// cache-fill.lua, which stores only if the generation has not moved. An invalidation bumps the
// generation before deleting the value, so a reader that saw the record before a revoke can
// no longer write "active" back after it.
import { createHash } from 'node:crypto';
import type { RedisClient } from '../redis/connect.js';
import { loadLuaSource } from '../redis/scripts.js';

export interface GuardedEntryKeys {
  readonly value: string;
  readonly generation: string;
}

/** What the shared layer knows about one entry. */
export type GuardedRead =
  | { readonly found: true; readonly json: string }
  | { readonly found: false; readonly generation: string };

/** Generations outlive any read that could still fill (they only need to outlast a lookup). */
const GENERATION_TTL_S = 86_400;

const fillLua = loadLuaSource('cache-fill');
const fillCommand = `gw_cacheFill_${createHash('sha1').update(fillLua).digest('hex').slice(0, 10)}`;

type FillCommand = (
  valueKey: string,
  generationKey: string,
  expectedGeneration: string,
  json: string,
  ttlS: number,
) => Promise<number>;

export class GuardedRedisCache {
  private readonly fillScript: FillCommand;

  constructor(
    private readonly redis: RedisClient,
    private readonly keysOf: (id: string) => GuardedEntryKeys,
  ) {
    if (!(fillCommand in redis))
      redis.defineCommand(fillCommand, { numberOfKeys: 2, lua: fillLua });
    const commands = redis as unknown as Record<string, FillCommand>;
    this.fillScript = (...args) => commands[fillCommand]!.call(redis, ...args);
  }

  async read(id: string): Promise<GuardedRead> {
    const keys = this.keysOf(id);
    const [json, generation] = await this.redis.mget(keys.value, keys.generation);
    if (json !== null && json !== undefined) return { found: true, json };
    return { found: false, generation: generation ?? '0' };
  }

  /** Stores `json` unless the entry was invalidated since `read` returned `generation`. */
  async fill(id: string, generation: string, json: string, ttlS: number): Promise<boolean> {
    const keys = this.keysOf(id);
    return (await this.fillScript(keys.value, keys.generation, generation, json, ttlS)) === 1;
  }

  /** Bumps the generation, then drops the value: no fill that read before this can store. */
  async invalidate(ids: readonly string[]): Promise<void> {
    // One transaction per entry: an entry's two keys share a slot, different entries may not
    // (a cluster refuses a transaction across slots).
    await Promise.all(
      ids.map(async (id) => {
        const keys = this.keysOf(id);
        await this.redis
          .multi()
          .incr(keys.generation)
          .expire(keys.generation, GENERATION_TTL_S)
          .del(keys.value)
          .exec();
      }),
    );
  }
}
