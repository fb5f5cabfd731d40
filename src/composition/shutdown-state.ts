// What the drain tells the parts started before it: whether it began (readiness), the cut
// every proxy step watches, and who stops starting work of their own (the webhook and e-mail
// senders). Its own file, so the parts it reaches need not import the drain, which reads
// their stop waits.
import { ShutdownCut } from '../inference/shutdown-cut.js';

export interface ShutdownState {
  /** True once the drain began (/readyz answers not ready). */
  draining: boolean;
  /** The requests still in flight after the cut (their drafts are left to the others). */
  unsettledAtExit: number;
  /** Watched by every proxy step; cut when the grace has elapsed. */
  readonly cut: ShutdownCut;
  /**
   * Called when the drain begins: each stops starting work of its own (a webhook or e-mail
   * attempt), leaving what is due in Postgres for the next instance (decision 408).
   */
  readonly stopStarting: Array<() => void>;
}

/** Nothing draining, nothing cut. */
export function shutdownState(): ShutdownState {
  return { draining: false, unsettledAtExit: 0, cut: new ShutdownCut(), stopStarting: [] };
}
