// A model policy as typed in a form: patterns separated by spaces or commas (`vendor_b/*`).

/** The patterns of a typed model policy (none: every model). */
export const modelPolicyOf = (text: string): string[] =>
  text
    .split(/[\s,]+/)
    .map((pattern) => pattern.trim())
    .filter((pattern) => pattern !== '');
