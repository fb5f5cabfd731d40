// The end of the shutdown grace: SIGTERM lets the requests in flight run for SHUTDOWN_GRACE_MS;
// whatever is still waiting on a vendor then is cut — its vendor call abandoned, its stream
// ended with an error event — so it is settled (as partial, `gateway_shutdown`) while Redis,
// the token counter and the usage writer's final drain are still there, instead of being killed
// with the process and lapsing unrecorded. Each proxy step watches this one object.
import { gwError, type GwError } from '../errors.js';

/** What the proxy step needs: whether the cut came, and to be told when it does. */
export interface ShutdownWatch {
  readonly cut: boolean;
  /** Calls `listener` at the cut (at once if it came already); returns the unsubscribe. */
  onCut(listener: () => void): () => void;
}

/** One proxy step waiting for the cut: a node of ShutdownCut's list of watchers. */
interface Watcher {
  listener: (() => void) | undefined;
  newer: Watcher | undefined;
  older: Watcher | undefined;
}

/**
 * The watchers are a doubly linked list whose removed nodes let go of their neighbours, not a
 * Set: a long-lived Set that every request adds to and deletes from kept each request alive
 * through young collections (its superseded hash tables still point at removed entries),
 * about 5 KB promoted per request (bench/RESULTS.md, 2026-11-23; docs/decisions.md, 265).
 */
export class ShutdownCut implements ShutdownWatch {
  private cutDone = false;
  private newest: Watcher | undefined = undefined;

  get cut(): boolean {
    return this.cutDone;
  }

  onCut(listener: () => void): () => void {
    if (this.cutDone) {
      listener();
      return () => undefined;
    }
    const watcher: Watcher = { listener, newer: undefined, older: this.newest };
    if (this.newest) this.newest.newer = watcher;
    this.newest = watcher;
    return () => this.remove(watcher);
  }

  /** Cuts every call in flight, and any that would start later. */
  cutAll(): void {
    this.cutDone = true;
    const listeners: Array<() => void> = [];
    while (this.newest) {
      const watcher = this.newest;
      listeners.push(watcher.listener!);
      this.remove(watcher);
    }
    for (const listener of listeners) listener();
  }

  private remove(watcher: Watcher): void {
    if (watcher.listener === undefined) return; // removed already
    if (watcher.newer) watcher.newer.older = watcher.older;
    else this.newest = watcher.older;
    if (watcher.older) watcher.older.newer = watcher.newer;
    watcher.listener = undefined;
    watcher.newer = undefined;
    watcher.older = undefined;
  }
}

/** What a client whose request the cut ended gets: a 503 answer, or a stream's error event. */
export function shutdownError(vendorLabel: string): GwError {
  return gwError(
    'gw_unavailable',
    `this gateway instance is shutting down; the ${vendorLabel} answer was cut; retry`,
    { headers: { 'retry-after': '1' } },
  );
}
