// A command's arguments are its flags: anything else is refused with a usage error, never
// ignored (an ignored `[--grace-seconds 0]` left a leaked secret working for a day), and a flag
// that takes one value is given once (the last of two won, silently).
import { describe, expect, it } from 'vitest';
import { parseFlags, UsageError } from './output.js';

const options = {
  'client-id': { type: 'string' },
  'grace-seconds': { type: 'string' },
  json: { type: 'boolean' },
  'redirect-uri': { type: 'string', multiple: true },
} as const;

/** The usage error parseFlags refuses `argv` with (its code is always gw_invalid_request). */
function refusalOf(argv: string[]): string {
  let refused: unknown;
  try {
    parseFlags(argv, options);
  } catch (error) {
    refused = error;
  }
  expect(refused).toBeInstanceOf(UsageError);
  expect((refused as UsageError).code).toBe('gw_invalid_request');
  return (refused as UsageError).message;
}

describe('parseFlags', () => {
  it('reads the flags', () => {
    const { values } = parseFlags(['--client-id', 'c', '--grace-seconds', '0'], options);
    expect(values).toEqual({ 'client-id': 'c', 'grace-seconds': '0' });
  });

  it("refuses an argument that is not a flag, naming a usage line's brackets copied with it", () => {
    for (const argv of [
      ['--client-id', 'c', '[--grace-seconds', '0]'],
      ['--client-id', 'c', '0]'],
    ]) {
      expect(refusalOf(argv)).toContain(`unexpected argument "${argv[2]}"`);
    }
  });

  it('never repeats any other stray word: it may be a secret given to a flag that takes none (decision 494)', () => {
    const secret = 'sk-live-0123456789abcdef';
    expect(refusalOf(['--client-id', 'c', '--json', secret])).toBe(
      'unexpected argument after --json, which takes no value: this command takes only --flags (see gw --help; [ ] in a usage line marks an optional flag, not text to type)',
    );
    expect(refusalOf(['--client-id', 'c', secret])).toBe(
      "unexpected argument after --client-id's value: this command takes only --flags (see gw --help; [ ] in a usage line marks an optional flag, not text to type)",
    );
    expect(refusalOf([secret, '--client-id', 'c'])).toBe(
      'unexpected argument before the flags: this command takes only --flags (see gw --help; [ ] in a usage line marks an optional flag, not text to type)',
    );
  });

  it('refuses a one-value flag given twice, in either form, whichever the values', () => {
    for (const argv of [
      ['--client-id', 'c', '--grace-seconds', '0', '--grace-seconds', '86400'],
      ['--client-id', 'c', '--grace-seconds=0', '--grace-seconds', '0'],
      ['--json', '--client-id', 'c', '--json'],
    ]) {
      expect(refusalOf(argv)).toMatch(/^--(grace-seconds|json) is given twice/);
    }
  });

  it('names an unknown flag in its own words, with the flag it is nearest to and the ones it takes (decision 467)', () => {
    const flags = '--client-id, --grace-seconds, --json, --redirect-uri';
    expect(refusalOf(['--client', 'c'])).toBe(
      `unknown flag --client: did you mean --client-id? (this command takes ${flags}; see gw --help)`,
    );
    expect(refusalOf(['--client-id', 'c', '--grace-second=5'])).toBe(
      `unknown flag --grace-second: did you mean --grace-seconds? (this command takes ${flags}; see gw --help)`,
    );
    expect(refusalOf(['--colour', 'red'])).toBe(
      `unknown flag --colour (this command takes ${flags}; see gw --help)`,
    );
    expect(refusalOf(['-c', 'c'])).toBe(
      `unknown flag -c: flags are written --name (this command takes ${flags}; see gw --help)`,
    );
  });

  it('says a flag lacks its value, also when what follows it starts with "-" (decision 467)', () => {
    expect(refusalOf(['--client-id'])).toBe('--client-id needs a value');
    // Never repeated: the word may be a secret.
    expect(refusalOf(['--client-id', 'c', '--grace-seconds', '-5'])).toBe(
      '--grace-seconds needs a value: the word after it starts with "-", so it is read as a flag (a value that starts with "-" is written --grace-seconds=-…)',
    );
    expect(refusalOf(['--client-id', '--json'])).toMatch(/^--client-id needs a value: /);
    expect(refusalOf(['--json=yes'])).toBe('--json takes no value');
  });

  it('takes a flag that is for several values as often as it is given', () => {
    const { values } = parseFlags(
      ['--redirect-uri', 'https://a.example/cb', '--redirect-uri=https://b.example/cb'],
      options,
    );
    expect(values['redirect-uri']).toEqual(['https://a.example/cb', 'https://b.example/cb']);
  });
});
