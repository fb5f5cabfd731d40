import { describe, expect, it } from 'vitest';
import { MAX_BATCH_BYTES, UpstreamBody, type BodySource } from './upstream-body.js';

/** A source that records what the body asked of undici, and can answer resume at once. */
function recordingSource(onResume?: (body: UpstreamBody) => void): {
  source: BodySource;
  calls: string[];
  attach: (body: UpstreamBody) => UpstreamBody;
} {
  const calls: string[] = [];
  let attached: UpstreamBody | undefined;
  return {
    calls,
    source: {
      pause: () => calls.push('pause'),
      resume: () => {
        calls.push('resume');
        if (attached) onResume?.(attached);
      },
      abort: () => calls.push('abort'),
    },
    attach: (body) => (attached = body),
  };
}

const text = (buffer: Buffer): string => buffer.toString('utf8');

describe('UpstreamBody', () => {
  it('pauses the socket while chunks wait unread and resumes when the reader asks for more', async () => {
    const { source, calls } = recordingSource();
    const body = new UpstreamBody(source);
    body.push(Buffer.from('a'));
    body.push(Buffer.from('b'));
    expect(calls).toEqual(['pause']);
    const reading = body.bytes();
    await new Promise((resolve) => setImmediate(resolve)); // the reader drained the queue
    expect(calls).toEqual(['pause', 'resume']);
    body.push(Buffer.from('c'));
    body.end();
    expect(text(await reading)).toBe('abc');
    expect(calls).toEqual(['pause', 'resume']);
  });

  it('ends a read whose resume delivers the end at once (undici may call back synchronously)', async () => {
    const { source, attach } = recordingSource((body) => body.end());
    const body = attach(new UpstreamBody(source));
    body.push(Buffer.from('{"ok":true}'));
    expect(text(await body.bytes())).toBe('{"ok":true}');
  });

  it('hands over what arrived before a failure, then the failure', async () => {
    const { source } = recordingSource();
    const body = new UpstreamBody(source);
    body.push(Buffer.from('data: 1\n\n'));
    body.fail(new Error('other side closed'));
    const seen: string[] = [];
    await expect(
      (async () => {
        for await (const chunk of body) seen.push(text(chunk));
      })(),
    ).rejects.toThrow('other side closed');
    expect(seen).toEqual(['data: 1\n\n']);
  });

  it('reads an error answer up to a bound and closes the call instead of reading the rest', async () => {
    const { source, calls } = recordingSource();
    const body = new UpstreamBody(source);
    body.push(Buffer.from('0123456789'));
    expect(text(await body.bounded(4))).toBe('0123');
    expect(calls).toContain('abort');
  });

  it('gives what arrived when a bounded read fails half-way', async () => {
    const { source } = recordingSource();
    const body = new UpstreamBody(source);
    body.push(Buffer.from('{"error":'));
    body.fail(new Error('reset'));
    expect(text(await body.bounded(1024))).toBe('{"error":');
  });

  it('closes the call when the reader stops early, but not after the body ended', async () => {
    const early = recordingSource();
    const stopped = new UpstreamBody(early.source);
    stopped.push(Buffer.from('x'));
    for await (const chunk of stopped) {
      expect(text(chunk)).toBe('x');
      break;
    }
    expect(early.calls).toContain('abort');

    const whole = recordingSource();
    const complete = new UpstreamBody(whole.source);
    complete.push(Buffer.from('y'));
    complete.end();
    for await (const chunk of complete) expect(text(chunk)).toBe('y');
    expect(whole.calls).not.toContain('abort');
  });
  it('hands a waiting reader every chunk of one undici run as one, without pausing', async () => {
    const { source, calls } = recordingSource();
    const body = new UpstreamBody(source);
    const reader = body[Symbol.asyncIterator]();
    const first = reader.next(); // waiting before anything arrived
    body.push(Buffer.from('data: 1\n\n'));
    body.push(Buffer.from('data: 2\n\n'));
    body.push(Buffer.from('data: 3\n\n'));
    expect(calls).toEqual([]);
    expect(text((await first).value as Buffer)).toBe('data: 1\n\ndata: 2\n\ndata: 3\n\n');
    // Nothing left over for the next read: it waits (and the socket was never paused).
    const second = reader.next();
    body.push(Buffer.from('data: 4\n\n'));
    body.end();
    expect(text((await second).value as Buffer)).toBe('data: 4\n\n');
    expect((await reader.next()).done).toBe(true);
    expect(calls).toEqual([]);
  });

  it('pauses the socket once the batch of a waiting reader is full', async () => {
    const { source, calls } = recordingSource();
    const body = new UpstreamBody(source);
    const reader = body[Symbol.asyncIterator]();
    const first = reader.next();
    body.push(Buffer.alloc(MAX_BATCH_BYTES - 1, 'a'));
    expect(calls).toEqual([]);
    body.push(Buffer.from('b'));
    expect(calls).toEqual(['pause']);
    expect(((await first).value as Buffer).length).toBe(MAX_BATCH_BYTES);
    const second = reader.next(); // resumes: the rest of undici's buffer comes now
    expect(calls).toEqual(['pause', 'resume']);
    body.push(Buffer.from('c'));
    expect(text((await second).value as Buffer)).toBe('c');
  });

  it('gives a waiting reader a single chunk past the batch bound', async () => {
    const { source } = recordingSource();
    const body = new UpstreamBody(source);
    const reader = body[Symbol.asyncIterator]();
    const first = reader.next();
    body.push(Buffer.alloc(MAX_BATCH_BYTES * 2, 'a'));
    expect(((await first).value as Buffer).length).toBe(MAX_BATCH_BYTES * 2);
  });

  it('hands a waiting reader what arrived before the end or a failure, then the end or the failure', async () => {
    const ended = new UpstreamBody(recordingSource().source);
    const endedReads = ended[Symbol.asyncIterator]();
    const last = endedReads.next();
    ended.push(Buffer.from('data: [DONE]\n\n'));
    ended.end();
    expect(text((await last).value as Buffer)).toBe('data: [DONE]\n\n');
    expect((await endedReads.next()).done).toBe(true);

    const failed = new UpstreamBody(recordingSource().source);
    const failedReads = failed[Symbol.asyncIterator]();
    const partial = failedReads.next();
    failed.push(Buffer.from('data: 1\n\n'));
    failed.fail(new Error('other side closed'));
    expect(text((await partial).value as Buffer)).toBe('data: 1\n\n');
    await expect(failedReads.next()).rejects.toThrow('other side closed');
  });
});
