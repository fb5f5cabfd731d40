// The length rule of a dashboard password: read by the gateway's check (passwords.ts) and by
// the dashboard's forms, so it has no imports.

/** Lengths in characters (Unicode code points), not UTF-16 units: an emoji is one. */
export const PASSWORD_MIN_LENGTH = 12;
export const PASSWORD_MAX_LENGTH = 256;

/** A text's length in characters, as the rule counts them. */
export function passwordCharacters(text: string): number {
  let count = 0;
  for (const _codePoint of text) count += 1;
  return count;
}
