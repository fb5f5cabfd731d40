import { z } from 'zod';
import { describe, expect, it, vi } from 'vitest';
import {
  MAX_JSON_DEPTH,
  nestsDeeperThan,
  parseJsonBody,
  repeatedMemberName,
  costlyStructure,
} from './parse-body.js';
import { chatCompletionRequestSchema } from './chat-request.js';
import { messagesRequestSchema } from './messages-request.js';

const nestedText = (depth: number): string => `${'['.repeat(depth)}1${']'.repeat(depth)}`;

/**
 * Whether `refuse` got its answer without handing the body to JSON.parse: the costly part these
 * bounds exist to skip (how long it takes is for benchmarks, not tests, on a shared machine).
 */
function refusedBeforeParsing<T>(refuse: () => T): T {
  const parse = vi.spyOn(JSON, 'parse');
  try {
    return refuse();
  } finally {
    const calls = parse.mock.calls.length;
    parse.mockRestore();
    expect(calls, 'calls of JSON.parse').toBe(0);
  }
}

describe('JSON nesting bound', () => {
  it('counts arrays and objects alike, scalars as no level', () => {
    expect(nestsDeeperThan(1, 0)).toBe(false);
    expect(nestsDeeperThan({}, 0)).toBe(true);
    expect(nestsDeeperThan({ a: [{ b: 1 }] }, 3)).toBe(false);
    expect(nestsDeeperThan({ a: [{ b: {} }] }, 3)).toBe(true);
  });

  it('accepts 400 levels and refuses 401 with the spec’s 400 error', () => {
    const schema = z.unknown();
    expect(parseJsonBody(Buffer.from(nestedText(MAX_JSON_DEPTH)), schema)).not.toHaveProperty(
      'code',
    );
    expect(parseJsonBody(Buffer.from(nestedText(MAX_JSON_DEPTH + 1)), schema)).toMatchObject({
      code: 'gw_invalid_request',
      status: 400,
    });
  });

  it('refuses 2,000,000 levels (4 MB) before JSON.parse spends most of a second on them', () => {
    // V8's JSON.parse builds every level before the depth is checked: 0.5-1.5 s here.
    const body = Buffer.from(nestedText(2_000_000));
    expect(refusedBeforeParsing(() => parseJsonBody(body, z.unknown()))).toMatchObject({
      code: 'gw_invalid_request',
      message: expect.stringContaining('deeper than 400') as unknown,
    });
  });

  it('refuses 100,000 levels without overflowing the stack', () => {
    const parsed = parseJsonBody(Buffer.from(nestedText(100_000)), z.unknown());
    expect(parsed).toMatchObject({ code: 'gw_invalid_request' });
  });
});

describe('strict bodies', () => {
  it('finds a name repeated in any object, after unescaping, and nothing else', () => {
    expect(repeatedMemberName('{"a":1,"b":{"c":[{"d":1,"d":2}]}}')).toBe('d');
    expect(repeatedMemberName('{"a":1,"\\u0061":2}')).toBe('a');
    expect(repeatedMemberName('{"a":"\\"a\\":","b":["a","a"],"c":{"a":1}}')).toBeUndefined();
    expect(repeatedMemberName('[{"a":1},{"a":1}]')).toBeUndefined();
    expect(repeatedMemberName('{"A":1,"a":2,"":3}')).toBeUndefined();
  });

  it('refuses bytes that are not UTF-8 only when strict', () => {
    const latin1 = Buffer.from([0x22, 0xe9, 0x22]);
    expect(parseJsonBody(latin1, z.string(), undefined, { strict: true })).toMatchObject({
      code: 'gw_invalid_json',
    });
    expect(parseJsonBody(latin1, z.string())).toBe('\uFFFD');
  });
});

describe('distinct member names', () => {
  /** An array of objects of 100 members each, every member name new. */
  const manyNames = (names: number): Buffer => {
    const objects: string[] = [];
    for (let first = 0; first < names; first += 100) {
      const members: string[] = [];
      for (let name = first; name < Math.min(first + 100, names); name += 1) {
        members.push(`"k${name}":0`);
      }
      objects.push(`{${members.join(',')}}`);
    }
    return Buffer.from(`{"model":"m","tools":[${objects.join(',')}]}`);
  };

  it('refuses a body of 300,000 distinct member names before JSON.parse spends seconds on it', () => {
    // V8's JSON.parse costs about 1.5 s of the event loop for these 3.6 MB (a new hidden
    // class per new name), where 3.6 MB of ordinary JSON costs tens of milliseconds.
    const body = manyNames(300_000);
    expect(refusedBeforeParsing(() => parseJsonBody(body, z.unknown()))).toMatchObject({
      code: 'gw_invalid_request',
      status: 400,
      message: expect.stringContaining('member names') as unknown,
    });
  });

  it('refuses a body of few names in many orders before JSON.parse spends seconds on it', () => {
    // 100 names, each object of 100 members a new order of them: every object makes V8 build
    // about 100 new hidden classes, as new names would, while the body names only 102.
    let seed = 1;
    const random = (): number => {
      seed = (seed * 1_103_515_245 + 12_345) & 0x7fffffff;
      return seed / 0x7fffffff;
    };
    const names = Array.from({ length: 100 }, (_, index) => `k${index}`);
    const objects: string[] = [];
    for (let size = 0; size < 3_500_000; size += objects[objects.length - 1]!.length + 1) {
      for (let index = names.length - 1; index > 0; index -= 1) {
        const other = Math.floor(random() * (index + 1));
        [names[index], names[other]] = [names[other]!, names[index]!];
      }
      objects.push(`{${names.map((name) => `"${name}":0`).join(',')}}`);
    }
    const body = Buffer.from(`{"model":"m","tools":[${objects.join(',')}]}`);
    expect(refusedBeforeParsing(() => parseJsonBody(body, z.unknown()))).toMatchObject({
      code: 'gw_invalid_request',
    });
  });

  it('refuses more than 100,000 arrays and objects before JSON.parse sees them, and reads 100,000', () => {
    // 1,300,000 empty objects cost V8's JSON.parse about a second: no shape or depth bound
    // catches them (one shape, two levels).
    const containers = (count: number, each: string): Buffer =>
      Buffer.from(
        `{"model":"m","x":[${Array<string>(count - 2)
          .fill(each)
          .join(',')}]}`,
      );
    for (const each of ['{}', '[]']) {
      expect(
        refusedBeforeParsing(() => parseJsonBody(containers(100_001, each), z.unknown())),
      ).toMatchObject({
        code: 'gw_invalid_request',
        status: 400,
        message: 'the request body has more than 100000 arrays and objects',
      });
      expect(parseJsonBody(containers(100_000, each), z.unknown())).not.toHaveProperty('code');
    }
    // Brackets inside strings open nothing.
    expect(costlyStructure(`["${'['.repeat(200_000)}"]`, 10, 10)).toBeUndefined();
  });

  it('counts a shape per member count and names in order, nothing in strings or arrays', () => {
    const shapes = (text: string): number => {
      let limit = 0;
      while (costlyStructure(text.padEnd(4 * limit, ' '), limit, 400) === 'shapes') limit += 1;
      return limit;
    };
    expect(shapes('{"a":1,"b":2}')).toBe(2);
    expect(shapes('[{"a":1,"b":2},{"a":3,"b":4}]')).toBe(2);
    expect(shapes('[{"a":1,"b":2},{"b":3,"a":4}]')).toBe(4);
    expect(shapes('[{"a":1},{"a":1,"b":2}]')).toBe(3);
    expect(shapes('{"a":[[{"b":1}],"x"],"c":2}')).toBe(3);
    expect(shapes('{"a":"\\":\\"b\\":","c":["d" , ":"]}')).toBe(2);
    expect(shapes('{"a\\\\":1,"\\u0061":2}')).toBe(2);
    expect(shapes('{"a":1,"b":')).toBe(2); // unclosed: its name sequences count
  });

  it('reads a body of 10,000 distinct names, and any number of repeated ones', () => {
    // 9,998 in the tools, and model and tools themselves.
    expect(parseJsonBody(manyNames(9_998), z.unknown())).not.toHaveProperty('code');
    expect(parseJsonBody(manyNames(9_999), z.unknown())).toMatchObject({ status: 400 });
    const repeated = Array.from({ length: 50_000 }, () => '{"role":"user","content":"x"}');
    const body = Buffer.from(`{"messages":[${repeated.join(',')}]}`);
    expect(parseJsonBody(body, z.unknown())).not.toHaveProperty('code');
  });
});

describe('validation stops at the first issue', () => {
  it('builds the first issue only, however many items break the schema', () => {
    // An error map runs once per issue the answer holds: a count of 1 shows the other 99,989
    // were never built (a full report cost 0.4-0.7 s of CPU: bench/micro/invalid-bodies.ts).
    let issuesBuilt = 0;
    const item = z.number({
      error: () => {
        issuesBuilt += 1;
        return 'must be a number';
      },
    });
    const body = Buffer.from(JSON.stringify({ items: Array<string>(99_990).fill('x') }));
    expect(parseJsonBody(body, z.object({ items: z.array(item) }))).toMatchObject({
      code: 'gw_invalid_request',
      message: 'items.0: must be a number',
    });
    expect(issuesBuilt).toBe(1);
  });

  it('answers the issue a full report would name first', () => {
    const schema = z.object({
      model: z.string(),
      max_tokens: z.number(),
      messages: z.array(z.string()),
    });
    const broken = { model: 'm', max_tokens: 'eight', messages: ['a', 1, 2] };
    expect(parseJsonBody(Buffer.from(JSON.stringify(broken)), schema)).toMatchObject({
      message: 'max_tokens: must be a number',
    });
    const laterOnly = { ...broken, max_tokens: 8 };
    expect(parseJsonBody(Buffer.from(JSON.stringify(laterOnly)), schema)).toMatchObject({
      message: 'messages.1: must be a string',
    });
  });

  it('names the first broken message of a huge messages body', () => {
    const messages = Array.from({ length: 99_990 }, (_, index) => ({
      role: index % 2 === 0 ? 'user' : 'assistant',
      content: index < 3 ? 'hi' : 1,
    }));
    const body = Buffer.from(JSON.stringify({ model: 'm', max_tokens: 8, messages }));
    expect(parseJsonBody(body, messagesRequestSchema)).toMatchObject({
      code: 'gw_invalid_request',
      status: 400,
      message: 'messages.3.content: has none of the accepted forms',
    });
    const roles = messages.map(() => ({ role: 1, content: 'hi' }));
    const chat = Buffer.from(JSON.stringify({ model: 'm', messages: roles }));
    expect(parseJsonBody(chat, chatCompletionRequestSchema)).toMatchObject({
      message: expect.stringMatching(/^messages\.0\.role: must be one of system, /) as unknown,
    });
  });
});
