// A commit fence: work run under `runFenced` has every transaction it commits through
// `withTransaction` checked first, in the transaction itself, by the fence it was given. An
// idempotent request's fence (decision 388) marks its key as having taken effect and fails the
// commit when the request no longer holds its key (it outlived its lease and a retry took the
// key over): its change and the mark commit together or not at all. A transaction of it that
// returned a refusal is rolled back instead, unmarked (decision 393): a refusal changes nothing,
// so a key whose request died after one is free, never reported as having taken effect. The
// fence is the request's for as long as `work` runs; a transaction committed after that (work it
// left in the background) is not checked.
//
// The fence rides an AsyncLocalStorage, which on Node 20 hooks every promise the process makes
// while it is enabled (a promise-heavy loop ran 2.2 times slower: decision 389). It is enabled
// only while fenced work runs (dashboard creates, rare) and disabled when the last one ends, so
// the inference path pays nothing the rest of the time.
import { AsyncLocalStorage } from 'node:async_hooks';
import type pg from 'pg';

/** A pooled client (pool.ts's DbClient; named from pg here, as pool.ts imports this file). */
type DbClient = pg.PoolClient;

/**
 * Decides, on the transaction's client and before its COMMIT, what becomes of a transaction
 * whose work returned `result`: true to commit it (with whatever the fence wrote in it), false
 * to roll it back and still return `result` (a refusal), or rejects to roll it back and fail.
 */
export type CommitFence = (client: DbClient, result: unknown) => Promise<boolean>;

interface FencedScope {
  readonly fence: CommitFence;
  open: boolean;
}

const scopes = new AsyncLocalStorage<FencedScope>();
let openScopes = 0;

/** Runs `work` with every transaction it commits checked by `fence` first. */
export async function runFenced<T>(fence: CommitFence, work: () => Promise<T>): Promise<T> {
  const scope: FencedScope = { fence, open: true };
  openScopes += 1;
  try {
    return await scopes.run(scope, work);
  } finally {
    scope.open = false;
    openScopes -= 1;
    // The last fenced work is over: take the promise hooks away until the next one.
    if (openScopes === 0) scopes.disable();
  }
}

/**
 * Runs the fence of the work this transaction belongs to, if any, before its COMMIT: true to
 * commit (always, outside fenced work), false to roll back.
 */
export async function checkCommitFence(client: DbClient, result: unknown): Promise<boolean> {
  if (openScopes === 0) return true;
  const scope = scopes.getStore();
  return scope?.open ? scope.fence(client, result) : true;
}

/** How many fenced works are running (the promise hooks are on only while this is above 0). */
export function fencedWorkRunning(): number {
  return openScopes;
}
