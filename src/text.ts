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
