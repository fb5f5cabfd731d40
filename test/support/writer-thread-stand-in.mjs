// A stand-in for the usage writer thread (test/usage-writer-thread.test.ts): reports one
// batch, then either dies (its first life, as a crashed writer would) or waits for the stop
// message and exits like the real one.
import { parentPort, threadId, workerData } from 'node:worker_threads';
import { appendFileSync, readFileSync } from 'node:fs';

const lives = workerData.livesFile;
appendFileSync(lives, `${threadId}\n`);
parentPort.postMessage({ kind: 'rows_written', count: 3 });
if (readFileSync(lives, 'utf8').trim().split('\n').length === 1) {
  throw new Error('writer crashed');
}
parentPort.on('message', (message) => {
  if (message !== 'stop') return;
  parentPort.close();
});
