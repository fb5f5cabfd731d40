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

/** C0 and C1 control characters and DEL. */
const isControl = (char: string): boolean => {
  const code = char.charCodeAt(0);
  return code < 0x20 || (code >= 0x7f && code <= 0x9f);
};
/**
 * Characters that reorder the text around them: a name with them displays as another name
 * (`Support\u202Etob` shows as "Supportbot" on the consent page, in lists and the audit log).
 * Right-to-left letters themselves are fine (decision 311). The dashboard shows them as marks in
 * text it does not refuse them in (web/dashboard/src/shown-text.ts).
 */
export const BIDI_CONTROL = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;

/**
 * Why `name` cannot be a name people read (an app's, a connection's, a key's, an OAuth
 * client's), or undefined when it can; its length is the caller's to bound.
 */
export function displayNameProblem(name: string): string | undefined {
  if ([...name].some(isControl)) return 'must not contain control characters';
  if (BIDI_CONTROL.test(name)) {
    return 'must not contain bidirectional control characters (U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069)';
  }
  if (LONE_SURROGATE.test(name)) return 'must not contain lone surrogates';
  return undefined;
}
