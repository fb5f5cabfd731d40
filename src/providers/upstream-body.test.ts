import { describe, expect, it } from 'vitest';
import { UpstreamBody, type BodySource } from './upstream-body.js';

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
});
