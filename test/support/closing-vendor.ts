// Starts test/support/closing-vendor-front.mjs on its own thread: a vendor front that closes
// new connections as told, and counts what reached it (see there).
import { once } from 'node:events';
import { Worker } from 'node:worker_threads';

export interface ClosingFrontStats {
  readonly accepted: number;
  readonly closedUnread: number;
  readonly requests: number;
}

export interface ClosingFront {
  readonly url: string;
  readonly port: number;
  /** [0]: connections closed unread so far (shared memory: readable while blocked). */
  readonly closed: Int32Array;
  stats(): Promise<ClosingFrontStats>;
  /** Closes every open connection (mode 'pass'); `closed` counts them once done. */
  closeAll(): void;
  /**
   * Passes on the requests held by `front:hold=<name>` in their text (mode 'pass'), or lets
   * them pass when they come.
   */
  release(name: string): void;
  stop(): Promise<void>;
}

export async function startClosingFront(options: {
  mode: 'close_new' | 'take_and_close' | 'pass';
  closeFirst?: number;
  /** Where connections it does not close go (0: nowhere, for fronts that close them all). */
  upstreamPort?: number;
}): Promise<ClosingFront> {
  const closed = new Int32Array(new SharedArrayBuffer(4));
  const worker = new Worker(new URL('./closing-vendor-front.mjs', import.meta.url), {
    workerData: { upstreamPort: 0, ...options, closed },
  });
  const [{ port }] = (await once(worker, 'message')) as [{ port: number }];
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    closed,
    async stats() {
      worker.postMessage('stats');
      const [{ stats }] = (await once(worker, 'message')) as [{ stats: ClosingFrontStats }];
      return stats;
    },
    closeAll() {
      worker.postMessage('close_all');
    },
    release(name) {
      worker.postMessage({ release: name });
    },
    async stop() {
      worker.postMessage('stop');
      await once(worker, 'exit');
    },
  };
}
