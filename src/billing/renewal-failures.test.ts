// The log of failing hold renewals: one line when they start failing, one when a whole round
// passed without a failure, however the successes and failures of many holders interleave (a
// Redis Cluster with one master gone).
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { RenewalFailures } from './renewal-failures.js';

const ROUND_MS = 60;
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function logged(): { lines: Array<Record<string, unknown>>; failures: RenewalFailures } {
  const lines: Array<Record<string, unknown>> = [];
  const logger = pino(
    { level: 'info' },
    { write: (line: string) => lines.push(JSON.parse(line) as Record<string, unknown>) },
  );
  return { lines, failures: new RenewalFailures(logger, ROUND_MS) };
}

describe('failing hold renewals', () => {
  it('log one line while successes and failures interleave, and one once a round has none', async () => {
    const { lines, failures } = logged();
    for (let round = 0; round < 5; round += 1) {
      failures.failed(new Error('Connection is closed.'), `req_${round}`);
      failures.succeeded();
      failures.failed(new Error('Connection is closed.'), `req_${round}b`);
      await sleep(ROUND_MS / 3);
    }
    expect(lines.map((line) => line.msg)).toEqual([
      'hold renewals fail: holds lapse if Redis stays out of reach',
    ]);
    expect(lines[0]).toMatchObject({
      requestId: 'req_0',
      err: { message: 'Connection is closed.' },
    });
    // A success after the last failure; a whole round passes with none.
    failures.succeeded();
    await sleep(ROUND_MS * 3);
    expect(lines.map((line) => line.msg)).toEqual([
      'hold renewals fail: holds lapse if Redis stays out of reach',
      'hold renewals succeed again',
    ]);
    expect(lines[1]).toMatchObject({ failed: 10 });
    // Failing again later is a new episode: logged again, once.
    failures.failed(new Error('Connection is closed.'), 'req_later');
    failures.failed(new Error('Connection is closed.'), 'req_later_b');
    expect(lines).toHaveLength(3);
  });

  it('log nothing while renewals succeed', async () => {
    const { lines, failures } = logged();
    failures.succeeded();
    await sleep(ROUND_MS * 2);
    expect(lines).toEqual([]);
  });
});
