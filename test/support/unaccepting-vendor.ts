// A vendor address whose connections never open: a listener on its own thread with a backlog
// of one, the thread blocked so it accepts nothing, and the backlog filled by this helper's
// own connections. The kernel then drops every further SYN (Linux), so a connect to it hangs until
// the connecting side gives up (undici: 10 s) — the slow or hung connect of a vendor in
// trouble. `release()` unblocks the thread: from then on it accepts, and counts the bytes it
// was sent (none should come from a request nobody waits for; its fillers send nothing).
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { Worker } from 'node:worker_threads';

export interface UnacceptingVendor {
  readonly url: string;
  /** Lets the listener accept again. */
  release(): void;
  /** Connections accepted since release (besides its own fillers), and the bytes they sent. */
  stats(): Promise<{ accepted: number; received: number }>;
  stop(): Promise<void>;
}

const LISTENER = `
const { parentPort, workerData } = require('node:worker_threads');
const { createServer } = require('node:net');
let received = 0;
let accepted = 0;
const server = createServer((socket) => {
  accepted += 1;
  socket.on('error', () => {});
  socket.on('data', (chunk) => { received += chunk.length; });
});
server.listen({ port: 0, host: '127.0.0.1', backlog: 1 }, () => {
  parentPort.postMessage({ port: server.address().port });
  // Blocked until released: nothing is accepted meanwhile.
  Atomics.wait(workerData.gate, 0, 0);
  parentPort.on('message', (message) => {
    if (message === 'stats') parentPort.postMessage({ accepted, received });
    if (message === 'stop') server.close(() => parentPort.close());
  });
});
`;

export async function startUnacceptingVendor(): Promise<UnacceptingVendor> {
  const gate = new Int32Array(new SharedArrayBuffer(4));
  const worker = new Worker(LISTENER, { eval: true, workerData: { gate } });
  const [{ port }] = (await once(worker, 'message')) as [{ port: number }];
  // Fill the accept queue: the kernel completes connects until it is full (two, on Linux, for
  // a backlog of one), and drops every SYN after. The first connect that hangs is dropped, so
  // it does not open later.
  const fillers: Socket[] = [];
  for (;;) {
    const socket = connect(port, '127.0.0.1');
    socket.on('error', () => undefined);
    const opened = await Promise.race([
      once(socket, 'connect').then(() => true),
      new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 300)),
    ]);
    if (!opened) {
      socket.destroy();
      break;
    }
    fillers.push(socket);
    if (fillers.length > 16) throw new Error('the listener kept completing connects');
  }
  const release = (): void => {
    if (Atomics.load(gate, 0) === 1) return;
    Atomics.store(gate, 0, 1);
    Atomics.notify(gate, 0);
  };
  return {
    url: `http://127.0.0.1:${port}`,
    release,
    async stats() {
      worker.postMessage('stats');
      const [{ accepted, received }] = (await once(worker, 'message')) as [
        { accepted: number; received: number },
      ];
      return { accepted: accepted - fillers.length, received };
    },
    async stop() {
      release();
      for (const socket of fillers) socket.destroy();
      worker.postMessage('stop');
      await once(worker, 'exit');
    },
  };
}
