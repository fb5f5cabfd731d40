// The test files run one after another in each worker's process, sharing its modules
// (vitest.config.ts: `isolate: false`, decision 329). That is safe while no file changes what
// another file's modules see: no module replaced by a mock, no environment variable or global
// stubbed or written, in a test file or in a helper under test/support. (Spies and stubs made
// through vi are undone after each test: restoreMocks, unstubEnvs, unstubGlobals.)
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

function testFiles(folder: string): string[] {
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) => {
    const path = join(folder, entry.name);
    if (entry.isDirectory()) return entry.name === 'node_modules' ? [] : testFiles(path);
    return entry.name.endsWith('.test.ts') || folder.endsWith('support') ? [path] : [];
  });
}

/** What changes another file's modules or environment, and stays changed after the file. */
const SHARED_STATE_WRITES: readonly [string, RegExp][] = [
  ['a module mock', /\bvi\.(?:mock|doMock)\(/],
  ['a stubbed environment variable or global', /\bvi\.stub(?:Env|Global)\(/],
  ['fake timers', /\bvi\.useFakeTimers\(/],
  [
    'a write to process.env',
    /process\.env(?:\.\w+|\[[^\]]+\])?\s*(?:=[^=>]|\?\?=|\|\|=)|delete\s+process\.env|(?:assign|set)\(\s*process\.env\b/,
  ],
  ['a global written', /\bglobalThis(?:\.\w+|\[[^\]]+\])\s*(?:=[^=>]|\?\?=|\|\|=)/],
  ["undici's global dispatcher replaced", /\bsetGlobalDispatcher\(/],
];

describe('test files sharing a process', () => {
  it('change no module, environment variable or global that another file sees', () => {
    const found = testFiles('test')
      .concat(testFiles('src'))
      // this file names each pattern's example in its second test
      .filter((file) => file !== join('test', 'test-isolation.test.ts'))
      .flatMap((file) => {
        const text = readFileSync(file, 'utf8');
        return SHARED_STATE_WRITES.filter(([, pattern]) => pattern.test(text)).map(
          ([what]) => `${file}: ${what}`,
        );
      });
    expect(found).toEqual([]);
  });

  it('would notice one (the patterns match what they name)', () => {
    const matches = (text: string) =>
      SHARED_STATE_WRITES.filter(([, pattern]) => pattern.test(text)).map(([what]) => what);
    expect(matches("vi.mock('../db/pool.js')")).toEqual(['a module mock']);
    expect(matches("vi.stubEnv('PORT', '1')")).toEqual([
      'a stubbed environment variable or global',
    ]);
    expect(matches('vi.useFakeTimers()')).toEqual(['fake timers']);
    expect(matches("process.env.PORT = '1'")).toEqual(['a write to process.env']);
    expect(matches("process.env['PORT'] = '1'")).toEqual(['a write to process.env']);
    expect(matches('delete process.env.PORT')).toEqual(['a write to process.env']);
    expect(matches('Object.assign(process.env, { PORT: 1 })')).toEqual(['a write to process.env']);
    expect(matches('process.env = {}')).toEqual(['a write to process.env']);
    expect(matches("process.env.PORT ||= '1'")).toEqual(['a write to process.env']);
    expect(matches('globalThis.fetch = stub')).toEqual(['a global written']);
    expect(matches('setGlobalDispatcher(agent)')).toEqual(["undici's global dispatcher replaced"]);
    expect(matches("process.env.PORT === '1'")).toEqual([]);
    expect(matches('const env = { ...process.env, PORT: 1 }')).toEqual([]);
    expect(matches('const url = process.env.TEST_REDIS_URL ?? x')).toEqual([]);
  });
});
