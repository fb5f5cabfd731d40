// A client as a route's response is one to the token counter: it can be gone already, or
// leave while its count waits or runs.
import type { CountingFor } from '../../src/tokens/fair-scheduler.js';

/** `leave()` is the client going away: every listener hears it, and later ones at once. */
export function leavingClient(alreadyGone = false): CountingFor & { leave(): void } {
  const listeners: Array<() => void> = [];
  const client = {
    aborted: alreadyGone,
    onAborted(listener: () => void): void {
      if (client.aborted) listener();
      else listeners.push(listener);
    },
    leave(): void {
      client.aborted = true;
      for (const listener of listeners) listener();
    },
  };
  return client;
}
