// The usage writer's thread host: counters reach the gateway's metrics, a thread that dies is
// started again, and stop() waits for the thread to finish.
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../src/log.js';
import {
  UsageWriterThread,
  type UsageWriterThreadSettings,
} from '../src/ledger/usage-writer-thread.js';
import { eventually } from './support/services.js';

const standIn = new URL('./support/writer-thread-stand-in.mjs', import.meta.url);

describe('usage writer thread', () => {
  it('relays counters, restarts a thread that died, and stops the live one', async () => {
    const livesFile = join(mkdtempSync(join(tmpdir(), 'gw-writer-')), 'lives');
    let rows = 0;
    const counters = {
      usageRowsWritten: { inc: (count: number) => (rows += count) },
      usageWriteFailures: { inc: () => undefined },
      usageDeadLetters: { inc: () => undefined },
    };
    const settings = { livesFile } as unknown as UsageWriterThreadSettings;
    const thread = new UsageWriterThread(settings, counters, createLogger('silent'), standIn, 20);
    thread.start();
    // The first thread reports a batch and dies; the second reports one and keeps running.
    await eventually(async () => (rows === 6 ? true : undefined));
    expect(readFileSync(livesFile, 'utf8').trim().split('\n')).toHaveLength(2);
    await thread.stop(5000);
    // Stopped for good: no third life.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(readFileSync(livesFile, 'utf8').trim().split('\n')).toHaveLength(2);
  });
});
