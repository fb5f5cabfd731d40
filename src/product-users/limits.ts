// The size and text rules of everything that names or describes a product user, wherever it
// enters (inference attribution, the management API, query parameters). Each value is
// bounded (it is cached and stored per user) and must be text Postgres can store: no NUL
// character and no lone UTF-16 surrogate. docs/limits.md lists these with their error codes.
import { z } from 'zod';
import { textProblem } from '../text.js';
import { isJsonContainer } from '../json-shapes.js';

export { textProblem };

export const MAX_EXTERNAL_USER_ID_CHARS = 256;
export const MAX_APP_ID_CHARS = 128;
export const MAX_DISPLAY_NAME_CHARS = 256;
/** RFC 5321's longest address. */
export const MAX_EMAIL_CHARS = 320;
export const MAX_GRANT_REASON_CHARS = 500;
/** Product-user metadata: its JSON size, how many keys in all, how deep objects nest. */
export const MAX_METADATA_BYTES = 8 * 1024;
export const MAX_METADATA_KEYS = 64;
export const MAX_METADATA_DEPTH = 4;
export const MAX_METADATA_KEY_CHARS = 128;

/** Why a bounded identifier or name is refused, or undefined when it is fine. */
export function boundedTextProblem(text: string, maxChars: number): string | undefined {
  if (text.length > maxChars) return `must be at most ${maxChars} characters`;
  return textProblem(text);
}

/**
 * Why an e-mail is refused, or undefined when it is fine. One rule for every way in (inference
 * attribution, PUT, the dashboard): the address is trimmed first (decision 27 hashes it
 * trimmed and lower-cased), then it must be at most MAX_EMAIL_CHARS characters of zod's e-mail
 * format. What is left empty after trimming is no address (see normalizedEmail).
 */
export function emailProblem(text: string): string | undefined {
  const trimmed = text.trim();
  if (trimmed === '') return undefined;
  if (trimmed.length > MAX_EMAIL_CHARS) return `must be at most ${MAX_EMAIL_CHARS} characters`;
  if (!z.regexes.email.test(trimmed)) return 'must be an e-mail address';
  return undefined;
}

/** A client's e-mail as it is kept: trimmed; '' when none was given (decision 281). */
export function normalizedEmail(text: string): string {
  return text.trim();
}

/** A zod string that passes emailProblem (surrounding spaces allowed, '' meaning none). */
export function emailText(): z.ZodString {
  return z.string().superRefine((text, context) => {
    const problem = emailProblem(text);
    if (problem) context.addIssue({ code: 'custom', message: problem });
  });
}

/** A zod string of at most `maxChars` characters that Postgres can store. */
export function storableText(maxChars: number): z.ZodString {
  return z
    .string()
    .max(maxChars, `must be at most ${maxChars} characters`)
    .refine((text) => textProblem(text) === undefined, {
      message: 'must not contain NUL characters or lone surrogates',
    });
}

/**
 * Why product-user metadata is refused, or undefined when it fits: at most
 * MAX_METADATA_BYTES of JSON, MAX_METADATA_KEYS keys at every level together, objects nested
 * at most MAX_METADATA_DEPTH deep, storable text in every key and string. Stops at the first
 * problem, so a huge value costs no more than the limit to reject.
 */
export function metadataProblem(metadata: Record<string, unknown>): string | undefined {
  let keys = 0;
  let bytes = 2;
  const visit = (value: unknown, depth: number, path: string): string | undefined => {
    if (typeof value === 'string') {
      bytes += Buffer.byteLength(value, 'utf8') + 2;
      if (bytes > MAX_METADATA_BYTES) return `must be at most ${MAX_METADATA_BYTES} bytes of JSON`;
      const problem = textProblem(value);
      return problem && `${path} ${problem}`;
    }
    if (!isJsonContainer(value)) {
      bytes += 8;
      return bytes > MAX_METADATA_BYTES
        ? `must be at most ${MAX_METADATA_BYTES} bytes of JSON`
        : undefined;
    }
    if (depth > MAX_METADATA_DEPTH) return `must nest at most ${MAX_METADATA_DEPTH} levels deep`;
    if (Array.isArray(value)) {
      for (let index = 0; index < value.length; index += 1) {
        const problem = visit(value[index], depth + 1, `${path}.${index}`);
        if (problem) return problem;
      }
      return undefined;
    }
    for (const key in value) {
      keys += 1;
      if (keys > MAX_METADATA_KEYS) return `must have at most ${MAX_METADATA_KEYS} keys`;
      if (key.length > MAX_METADATA_KEY_CHARS) {
        return `keys must be at most ${MAX_METADATA_KEY_CHARS} characters`;
      }
      const keyProblem = textProblem(key);
      if (keyProblem) return `keys ${keyProblem}`;
      bytes += Buffer.byteLength(key, 'utf8') + 4;
      const problem = visit((value as Record<string, unknown>)[key], depth + 1, `${path}.${key}`);
      if (problem) return problem;
    }
    return undefined;
  };
  return visit(metadata, 1, 'metadata');
}
