import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SseParser, type SseEvent } from './sse.js';

const recorded = [
  'data: {"id":"c1","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}\n\n',
  'data: {"id":"c1","choices":[{"index":0,"delta":{"content":"héllo 👋"}}]}\n\n',
  ': keep-alive\n\n',
  'event: message_delta\ndata: {"type":"message_delta","usage":{"output_tokens":2}}\n\n',
  'data: {"id":"c1","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":2}}\n\n',
  'data: [DONE]\n\n',
].join('');

function parseSplit(bytes: Buffer, cuts: number[]): SseEvent[] {
  const parser = new SseParser();
  const events: SseEvent[] = [];
  let start = 0;
  for (const cut of [...cuts].sort((a, b) => a - b)) {
    events.push(...parser.push(bytes.subarray(start, cut)));
    start = cut;
  }
  events.push(...parser.push(bytes.subarray(start)));
  events.push(...parser.end());
  return events;
}

/**
 * Characters the parser's string searches and rewrites examine while `work` runs: `indexOf`
 * from where it starts, `includes` and `replace` over the whole string. A measure of its work
 * that does not depend on the machine's speed.
 */
function charactersExamined(work: () => void): number {
  const strings = String.prototype;
  const { indexOf, includes, replace } = strings;
  let examined = 0;
  strings.indexOf = function (this: string, search: string, from?: number): number {
    examined += this.length - Math.min(Math.max(from ?? 0, 0), this.length);
    return indexOf.call(this, search, from);
  };
  strings.includes = function (this: string, search: string, from?: number): boolean {
    examined += this.length;
    return includes.call(this, search, from);
  };
  strings.replace = function (this: string, ...args: unknown[]): string {
    examined += this.length;
    return (replace as (...args: unknown[]) => string).apply(this, args);
  };
  try {
    work();
  } finally {
    Object.assign(strings, { indexOf, includes, replace });
  }
  return examined;
}

describe('SseParser', () => {
  const bytes = Buffer.from(recorded, 'utf8');
  const whole = parseSplit(bytes, []);

  it('parses a recorded stream into its events', () => {
    expect(whole.map((event) => event.data)).toEqual([
      '{"id":"c1","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}',
      '{"id":"c1","choices":[{"index":0,"delta":{"content":"héllo 👋"}}]}',
      '{"type":"message_delta","usage":{"output_tokens":2}}',
      '{"id":"c1","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":2}}',
      '[DONE]',
    ]);
    expect(whole[2]!.event).toBe('message_delta');
    expect(whole.map((event) => event.raw).join('')).toBe(recorded.replace(': keep-alive\n\n', ''));
  });

  it('gives the same events however the bytes are split (golden)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: bytes.length }), { maxLength: 40 }),
        (cuts) => {
          expect(parseSplit(bytes, cuts)).toEqual(whole);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('handles CRLF line ends split between chunks', () => {
    const crlf = Buffer.from(recorded.replace(/\n/g, '\r\n'), 'utf8');
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: crlf.length }), { maxLength: 20 }), (cuts) => {
        expect(parseSplit(crlf, cuts).map((event) => event.data)).toEqual(whole.map((e) => e.data));
      }),
      { numRuns: 200 },
    );
  });

  it('drops a trailing event that never completed', () => {
    const parser = new SseParser();
    expect(parser.push(Buffer.from('data: {"a":1}\n\ndata: {"cut'))).toHaveLength(1);
    expect(parser.end()).toEqual([]);
  });

  it('gives the events of the unsplit text for any text split anywhere', () => {
    // Blank lines that end across chunks ('\n' | '\n', '\r' | '\n'), runs of them, comments.
    const piece = fc.constantFrom('data: x', 'event: e', ': c', 'é', '👋', ':', ' ', 'a');
    const lineEnd = fc.constantFrom('\n', '\r', '\r\n', '\n\n', '\r\r', '\r\n\r\n');
    fc.assert(
      fc.property(
        fc.array(fc.oneof(piece, lineEnd), { maxLength: 40 }),
        fc.array(fc.nat(), { maxLength: 20 }),
        (pieces, rawCuts) => {
          const text = Buffer.from(pieces.join(''), 'utf8');
          const cuts = rawCuts.map((cut) => cut % (text.length + 1));
          expect(parseSplit(text, cuts)).toEqual(parseSplit(text, []));
        },
      ),
      { numRuns: 500 },
    );
  });

  it('reads an event that spans many chunks once, not once per chunk', () => {
    // Kept as one string searched from its start, a 1 MiB event in 1 KiB chunks was read
    // 1,024 times over (an 8 MB one cost about a second): each byte is now read a few times.
    const data = 'x'.repeat(1024 * 1024);
    for (const lineEnd of ['\n', '\r\n']) {
      const bytes = Buffer.from(`event: big${lineEnd}data: ${data}${lineEnd}${lineEnd}`, 'utf8');
      const cuts = Array.from(
        { length: Math.floor(bytes.length / 1024) },
        (_, n) => (n + 1) * 1024,
      );
      let events: SseEvent[] = [];
      const examined = charactersExamined(() => {
        events = parseSplit(bytes, cuts);
      });
      expect(events).toEqual([{ event: 'big', data, raw: `event: big\ndata: ${data}\n\n` }]);
      expect(examined).toBeGreaterThan(bytes.length); // the measure sees the parser's reads
      expect(examined).toBeLessThan(4 * bytes.length);
    }
  });

  describe('the bound on one event', () => {
    const limit = 64 * 1024;
    const event = (bytes: number): string => `data: ${'x'.repeat(bytes - 6)}\n\n`; // 6: 'data: '

    /** The events read from `text` pushed in `chunkBytes` chunks, and whether it stopped. */
    function read(text: string, chunkBytes: number): { data: string[]; tooLarge: boolean } {
      const parser = new SseParser(limit);
      const bytes = Buffer.from(text, 'utf8');
      const events: SseEvent[] = [];
      for (let at = 0; at < bytes.length; at += chunkBytes) {
        events.push(...parser.push(bytes.subarray(at, at + chunkBytes)));
      }
      events.push(...parser.end());
      return { data: events.map((read) => read.data.slice(0, 8)), tooLarge: parser.eventTooLarge };
    }

    it('reads an event of exactly the bound, in one chunk or many', () => {
      for (const chunkBytes of [1024, 1024 * 1024]) {
        expect(read(event(limit) + 'data: after\n\n', chunkBytes)).toEqual({
          data: ['xxxxxxxx', 'after'],
          tooLarge: false,
        });
      }
    });

    it('stops at the first event past it: the events before are read, nothing after', () => {
      for (const chunkBytes of [1024, 1024 * 1024]) {
        const text = 'data: before\n\n' + event(limit + 1) + 'data: after\n\n';
        expect(read(text, chunkBytes)).toEqual({ data: ['before'], tooLarge: true });
      }
    });

    it('counts UTF-8 bytes, not characters', () => {
      // 'é' is one character and two bytes: 40,000 of them are over 64 KiB.
      const text = `data: ${'é'.repeat(40_000)}\n\n`;
      expect(read(text, 1024 * 1024).tooLarge).toBe(true);
      expect(read(text, 1000).tooLarge).toBe(true);
      expect(read(`data: ${'é'.repeat(30_000)}\n\n`, 1000).tooLarge).toBe(false);
    });

    it('bounds lines that never make an event (no blank line) as well', () => {
      expect(read(': keep-alive\n'.repeat(10_000), 4096).tooLarge).toBe(true);
    });
  });
});
