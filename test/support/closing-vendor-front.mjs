// A TCP front for a vendor, on its own thread (so it acts while the test's event loop is
// blocked): it closes new connections as told, or passes them on to the vendor behind it,
// and counts the requests that reached it. workerData: { upstreamPort, mode, closeFirst,
// closed }: `closed` (an Int32Array on shared memory) counts the connections closed unread, so
// a blocked thread can wait for the next one with Atomics.wait.
//   mode 'close_new': the first `closeFirst` connections are closed as soon as accepted,
//     before anything is read from them (a vendor closing connections idle since accept);
//   mode 'take_and_close': every connection is closed once a request arrived on it, unanswered;
//   mode 'pass': connections are passed on; the message 'close_all' closes every open one
//     (a vendor closing kept-alive connections), each counted in `closed`. A request whose bytes
//     carry `front:hold=<name>` (in a message's text) is counted and held there, it and what
//     follows it on its connection, until the message { release: <name> } passes on every
//     request held by that name (a vendor thinking for as long as a test needs; a name released
//     before its request came is not held).
// Without an upstreamPort, connections it does not close are kept open, unanswered.
// Messages: 'stats' → { accepted, closedUnread, requests }.
import { connect, createServer } from 'node:net';
import { parentPort, workerData } from 'node:worker_threads';

const { upstreamPort, mode, closeFirst = 0, closed } = workerData;
const stats = { accepted: 0, closedUnread: 0, requests: 0 };
const open = new Set();
/** The requests held, by name: for each, a function that passes on what its connection waits to send. */
const holding = new Map();
const released = new Set();
/** A marker, once the character after its name has come (a name cut short is no name). */
const HOLD = /front:hold=([\w-]+)(?=[^\w-])/g;

/** Counts request lines in what a connection sent (each request's body is small JSON). */
function countRequests(chunk) {
  stats.requests += chunk.toString('latin1').split('POST /v1/').length - 1;
}

const server = createServer((socket) => {
  stats.accepted += 1;
  socket.on('error', () => {});
  if (mode === 'close_new' && stats.accepted <= closeFirst) {
    stats.closedUnread += 1;
    socket.destroy();
    if (closed) {
      Atomics.add(closed, 0, 1);
      Atomics.notify(closed, 0);
    }
    return;
  }
  if (mode === 'take_and_close') {
    socket.on('data', (chunk) => {
      countRequests(chunk);
      setTimeout(() => socket.destroy(), 20);
    });
    return;
  }
  socket.on('data', countRequests);
  open.add(socket);
  socket.on('close', () => open.delete(socket));
  if (!upstreamPort) return; // no vendor behind: the connection is kept open, unanswered
  const upstream = connect(upstreamPort, '127.0.0.1');
  upstream.on('error', () => socket.destroy());
  /** What the connection sent since a request on it was held (null: nothing held). */
  let held = null;
  /** The end of what came before: a marker split between two chunks is seen too. */
  let tail = '';
  socket.on('data', (chunk) => {
    const text = tail + chunk.toString('latin1');
    tail = text.slice(-64);
    const name =
      held === null
        ? [...text.matchAll(HOLD)].map((match) => match[1]).find((found) => !released.has(found))
        : undefined;
    if (name !== undefined) {
      held = [];
      const pass = () => {
        for (const waiting of held) upstream.write(waiting);
        held = null;
      };
      holding.set(name, [...(holding.get(name) ?? []), pass]);
    }
    if (held === null) upstream.write(chunk);
    else held.push(chunk);
  });
  socket.on('end', () => upstream.end());
  upstream.pipe(socket);
  socket.on('close', () => upstream.destroy());
});

server.listen(0, '127.0.0.1', () => parentPort.postMessage({ port: server.address().port }));
parentPort.on('message', (message) => {
  if (message === 'stats') parentPort.postMessage({ stats });
  if (typeof message === 'object' && message.release) {
    released.add(message.release);
    for (const pass of holding.get(message.release) ?? []) pass();
    holding.delete(message.release);
  }
  if (message === 'stop') server.close(() => parentPort.close());
  if (message === 'close_all') {
    for (const socket of open) {
      socket.destroy();
      Atomics.add(closed, 0, 1);
    }
    Atomics.notify(closed, 0);
  }
});
