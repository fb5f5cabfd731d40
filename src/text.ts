// Text Postgres can store: no NUL character (text and jsonb refuse it) and no lone UTF-16
// surrogate (not Unicode; it cannot be encoded as UTF-8). Checked wherever client text is
// stored or used in a query, so such input answers 400 instead of failing in the database.

// eslint-disable-next-line no-control-regex
const NUL = /\u0000/;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Why `text` cannot be stored as text, or undefined when it can. */
export function textProblem(text: string): string | undefined {
  if (NUL.test(text)) return 'must not contain a NUL character';
  if (LONE_SURROGATE.test(text)) return 'must not contain a lone surrogate (invalid Unicode)';
  return undefined;
}

/**
 * Why a header value cannot be taken as it came, or undefined when it can. uWebSockets.js
 * trims every header value of the bytes it compares below 33 as signed chars: spaces and
 * controls, and also every byte from 0x80 up at the value's ends. A value with non-ASCII text
 * therefore reaches the gateway cut short ("josé" as "jos") or, inside it, decoded from UTF-8
 * (U+FFFD for bytes that are not). Headers the gateway keys data by must be printable ASCII;
 * what survives of any other value is refused here.
 */
export function headerTextProblem(value: string): string | undefined {
  if (/[^\x20-\x7e]/.test(value)) return 'must be printable ASCII (no other characters or bytes)';
  return undefined;
}
