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

export class ShutdownCut implements ShutdownWatch {
  private cutDone = false;
  private readonly listeners = new Set<() => void>();

  get cut(): boolean {
    return this.cutDone;
  }

  onCut(listener: () => void): () => void {
    if (this.cutDone) {
      listener();
      return () => undefined;
    }
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  }

  /** Cuts every call in flight, and any that would start later. */
  cutAll(): void {
    this.cutDone = true;
    const watching = [...this.listeners];
    this.listeners.clear();
    for (const listener of watching) listener();
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
