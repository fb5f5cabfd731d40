// The compact o200k_base table counts what gpt-tokenizer (the reference, a development
// dependency) counts, from a file that is exactly what scripts/token-table.mjs writes.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';
import { describe, expect, it } from 'vitest';
// @ts-expect-error: a plain script, without types
import { o200kTableBytes } from '../../scripts/token-table.mjs';
import { BpeCounter, BpeTable, O200K_TABLE_FILE } from './bpe.js';

const table = BpeTable.load();
const counter = new BpeCounter(table);
/** gpt-tokenizer's count of `text` as plain text (special-token text included). */
const reference = (text: string): number => countTokens(text, { disallowedSpecial: new Set() });

const root = fileURLToPath(new URL('../..', import.meta.url));

/** The project's own docs and sources: prose, code, SQL, Lua, JSON. */
function projectTexts(): string[] {
  const texts: string[] = [];
  for (const folder of ['docs', 'src', 'lua', 'web/dashboard/src']) {
    const walk = (directory: string): void => {
      for (const name of readdirSync(directory)) {
        const path = join(directory, name);
        if (statSync(path).isDirectory()) walk(path);
        else if (/\.(ts|tsx|md|sql|lua|json)$/.test(name)) texts.push(readFileSync(path, 'utf8'));
      }
    };
    walk(join(root, folder));
  }
  return texts;
}

/** Deterministic mixed text: ASCII, accents, Arabic, CJK, emoji, lone surrogates, spaces. */
function mixedText(seed: number, length: number): string {
  const ranges: Array<[number, number]> = [
    [0x20, 0x7e],
    [0xc0, 0x24f],
    [0x600, 0x6ff],
    [0x4e00, 0x51ff],
    [0x1f300, 0x1f64f],
    [0xd800, 0xdbff],
    [0x9, 0xd],
  ];
  let state = seed;
  let text = '';
  for (let index = 0; index < length; index += 1) {
    state = (state * 1_103_515_245 + 12_345) % 2_147_483_648;
    const [low, high] = ranges[state % ranges.length]!;
    text += String.fromCodePoint(low + ((state >> 8) % (high - low + 1)));
  }
  return text;
}

describe('the o200k_base table', () => {
  it('is the file the script writes from the reference ranks, every token once', async () => {
    const expected = (await o200kTableBytes()) as Buffer;
    const committed = readFileSync(O200K_TABLE_FILE);
    const sha = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');
    expect(sha(committed)).toBe(sha(expected));
    expect(table.size).toBe(199_998);
  });
});

describe('counting', () => {
  it("counts the project's own files as the reference does", () => {
    const texts = projectTexts();
    expect(texts.length).toBeGreaterThan(300);
    const mismatches = texts.filter((text) => counter.count(text) !== reference(text));
    expect(mismatches).toEqual([]);
  });

  it('counts mixed scripts, emoji, control characters and lone surrogates as it does', () => {
    for (let seed = 1; seed <= 400; seed += 1) {
      const text = mixedText(seed, 1 + (seed % 300));
      expect({ seed, count: counter.count(text) }).toEqual({ seed, count: reference(text) });
    }
  });

  it('counts words, numbers, contractions and whitespace exactly', () => {
    const cases: Record<string, number> = {
      '': 0,
      a: 1,
      'hello world': 2,
      "I'm sure they'll say it's 12345 O'NEIL'S": reference(
        "I'm sure they'll say it's 12345 O'NEIL'S",
      ),
      '   \n\n\t  x': reference('   \n\n\t  x'),
    };
    for (const [text, tokens] of Object.entries(cases)) expect(counter.count(text)).toBe(tokens);
  });

  it('counts text that looks like a special token as text (the reference throws on it)', () => {
    expect(() => countTokens('<|endoftext|>')).toThrow();
    expect(counter.count('<|endoftext|>')).toBe(reference('<|endoftext|>'));
    expect(counter.count('<|endoftext|>')).toBe(7);
  });

  it("counts U+FEFF as tiktoken's one token, where the reference never finds it", () => {
    expect(reference('\ufeff')).toBe(2);
    expect(counter.count('\ufeff')).toBe(1);
    expect(counter.count('a\ufeffb')).toBe(reference('a\ufeffb') - 1);
  });
});
