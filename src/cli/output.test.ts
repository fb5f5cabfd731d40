// A command's arguments are its flags: anything else is refused with a usage error, never
// ignored (an ignored `[--grace-seconds 0]` left a leaked secret working for a day).
import { describe, expect, it } from 'vitest';
import { parseFlags, UsageError } from './output.js';

describe('parseFlags', () => {
  const options = { 'client-id': { type: 'string' }, 'grace-seconds': { type: 'string' } } as const;

  it('reads the flags', () => {
    const { values } = parseFlags(['--client-id', 'c', '--grace-seconds', '0'], options);
    expect(values).toEqual({ 'client-id': 'c', 'grace-seconds': '0' });
  });

  it('refuses an argument that is not a flag, naming it', () => {
    for (const argv of [
      ['--client-id', 'c', '[--grace-seconds', '0]'],
      ['--client-id', 'c', '0'],
    ]) {
      let refused: unknown;
      try {
        parseFlags(argv, options);
      } catch (error) {
        refused = error;
      }
      expect(refused).toBeInstanceOf(UsageError);
      expect((refused as UsageError).code).toBe('gw_invalid_request');
      expect((refused as UsageError).message).toContain(`unexpected argument "${argv[2]}"`);
    }
  });
});
