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
});
