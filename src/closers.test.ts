// Closers: last first, every one run though one fails, and a bounded one left behind when it
// does not end in time (decision 434).
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { Closers } from './closers.js';
import type { Logger } from './log.js';

function capture(): { logger: Logger; lines: () => Array<Record<string, unknown>> } {
  const written: string[] = [];
  const logger = pino({ level: 'warn' }, { write: (line: string) => written.push(line) });
  return {
    logger,
    lines: () => written.map((line) => JSON.parse(line) as Record<string, unknown>),
  };
}

describe('Closers', () => {
  it('closes last first, waiting for each unbounded close to end', async () => {
    const order: string[] = [];
    const closers = new Closers();
    closers.add('first', 'a', async () => {
      order.push('first');
    });
    closers.add('second', 'b', async () => {
      await new Promise((resolve) => setTimeout(resolve, 30));
      order.push('second');
    });
    await closers.closeAll(capture().logger);
    expect(order).toEqual(['second', 'first']);
  });

  it('leaves behind a bounded close that does not end in time, logs it, and closes the rest', async () => {
    const order: string[] = [];
    const closers = new Closers();
    closers.add('pool', 'p', () => order.push('pool'));
    closers.add('hung', 'h', () => new Promise(() => undefined), 20);
    closers.add('quick', 'q', async () => order.push('quick'), 1_000);
    const { logger, lines } = capture();
    await closers.closeAll(logger);
    expect(order).toEqual(['quick', 'pool']);
    expect(lines()).toEqual([
      expect.objectContaining({
        level: 40,
        resource: 'hung',
        waitMs: 20,
        msg: 'closing did not end in time: left behind',
      }),
    ]);
  });

  it('logs a failing close by name, runs the others, and rethrows the first failure at the end', async () => {
    const order: string[] = [];
    const closers = new Closers();
    closers.add('last', 'l', () => order.push('last'));
    closers.add('bounded', 'b', () => Promise.reject(new Error('bounded broke')), 1_000);
    closers.add('unbounded', 'u', () => {
      throw new Error('unbounded broke');
    });
    const { logger, lines } = capture();
    await expect(closers.closeAll(logger)).rejects.toThrow('unbounded broke');
    expect(order).toEqual(['last']);
    expect(lines().map((line) => [line.resource, line.msg])).toEqual([
      ['unbounded', 'closing failed'],
      ['bounded', 'closing failed'],
    ]);
  });
});
