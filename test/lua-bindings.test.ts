// The names of each script's KEYS and ARGV are written once in TypeScript (scriptSpecs); this
// checks them against the header block of every script in lua/, and the include loader.
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { expandIncludes, loadLuaSource, scriptSpecs } from '../src/redis/scripts.js';

const luaDir = new URL('../lua/', import.meta.url);

interface Header {
  keys: string[];
  args: string[];
  rest: string | undefined;
}

/** The `-- KEYS[n] name` and `-- ARGV[n] name` lines of a script, checked to be numbered 1..n. */
function header(file: string): Header {
  const source = readFileSync(new URL(`${file}.lua`, luaDir), 'utf8');
  const result: Header = { keys: [], args: [], rest: undefined };
  for (const line of source.split('\n')) {
    const match = /^-- (KEYS|ARGV)\[(\d+)(\.\.)?\]\s+(\w+)/.exec(line);
    if (!match) continue;
    const [, kind, index, rest, name] = match;
    const list = kind === 'KEYS' ? result.keys : result.args;
    if (rest) {
      expect(Number(index), `${file}: ARGV[${index}..] follows the last named argument`).toBe(
        result.args.length + 1,
      );
      result.rest = name;
      continue;
    }
    expect(Number(index), `${file}: ${kind}[${index}] ${name} out of order`).toBe(list.length + 1);
    list.push(name!);
  }
  return result;
}

describe('Lua bindings', () => {
  it('names every KEYS and ARGV of every script in the order of its header', () => {
    for (const spec of Object.values(scriptSpecs)) {
      const expected = header(spec.file);
      expect({ file: spec.file, keys: [...spec.keys] }).toEqual({
        file: spec.file,
        keys: expected.keys,
      });
      expect({ file: spec.file, args: [...spec.args] }).toEqual({
        file: spec.file,
        args: expected.args,
      });
      expect({ file: spec.file, rest: 'rest' in spec ? spec.rest : undefined }).toEqual({
        file: spec.file,
        rest: expected.rest,
      });
    }
  });

  it('binds every script in lua/', () => {
    const files = readdirSync(luaDir)
      .filter((name) => name.endsWith('.lua'))
      .map((name) => name.slice(0, -4))
      .sort();
    expect(
      Object.values(scriptSpecs)
        .map((spec) => spec.file)
        .sort(),
    ).toEqual(files);
  });

  it('inlines includes recursively, each once, at its first mention', () => {
    const files: Record<string, string> = {
      'includes/a.lua': '--#include b\nlocal a = 1',
      'includes/b.lua': '--#include c\nlocal b = 2',
      'includes/c.lua': 'local c = 3',
    };
    const read = (path: string): string => files[path]!;
    const source = expandIncludes('--#include a\n--#include c\n--#include b\nreturn a', read);
    expect(source.split('\n').filter((line) => line !== '')).toEqual([
      'local c = 3',
      'local b = 2',
      'local a = 1',
      'return a',
    ]);
  });

  it('refuses an include cycle', () => {
    const files: Record<string, string> = {
      'includes/a.lua': '--#include b',
      'includes/b.lua': '--#include a',
    };
    expect(() => expandIncludes('--#include a', (path) => files[path]!)).toThrow(
      'Lua include cycle: a -> b -> a',
    );
  });

  it('leaves no include line and no function defined twice in any script', () => {
    for (const spec of Object.values(scriptSpecs)) {
      const source = loadLuaSource(spec.file);
      expect(source).not.toMatch(/^--#include/m);
      const functions = [...source.matchAll(/^local function (\w+)/gm)].map((match) => match[1]);
      expect(new Set(functions).size, spec.file).toBe(functions.length);
    }
  });
});
