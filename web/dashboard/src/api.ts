// The one way the dashboard talks to the gateway: same-origin JSON with the session cookie,
// the CSRF token on every write, and the API's own error message on every failure.
import type { z } from 'zod';
import type {
  csrfTokenSchema,
  emailVerifiedSchema,
  passwordChangedSchema,
  passwordResetSchema,
  signedInSchema,
  verificationSentSchema,
} from '../../../src/routes/auth/answers.js';
import type {
  orgSummarySchema,
  pageOf,
  roleSchema,
} from '../../../src/routes/dashboard/answers.js';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** The gateway said to try again later (Retry-After): nothing was decided yet. */
    readonly retryLater = false,
  ) {
    super(message);
  }
}

/** A member's role in an organization. */
export type Role = z.output<typeof roleSchema>;
export type OrgSummary = z.output<typeof orgSummarySchema>;
/**
 * The signed-in user (`email_verified` false: gw sent a verification link not yet followed,
 * decision 370), their organizations, and a password reset by e-mailed link whose review is
 * not done yet (`review_after_reset`, decision 513).
 */
export type SignedIn = z.output<typeof signedInSchema>;
/** Where gw sends e-mail, a sign-up's answer: the verification link is on its way. */
export type VerificationSent = z.output<typeof verificationSentSchema>;
export type PasswordChanged = z.output<typeof passwordChangedSchema>;
export type PasswordReset = z.output<typeof passwordResetSchema>;
export type EmailVerified = z.output<typeof emailVerifiedSchema>;
/** The envelope of every dashboard list. */
export type Page<Row> = Omit<z.output<ReturnType<typeof pageOf>>, 'data'> & {
  readonly data: Row[];
};

/** Fired when the gateway says the session is gone: the app shows the sign-in page. */
export const SESSION_ENDED = 'gw:session-ended';

let csrfToken: string | null = null;

/** Forgets the CSRF token (a new session has a new one). */
export function forgetCsrfToken(): void {
  csrfToken = null;
}

async function csrf(): Promise<string> {
  if (csrfToken === null) {
    csrfToken = (await request<z.output<typeof csrfTokenSchema>>('GET', '/auth/csrf')).csrf_token;
  }
  return csrfToken;
}

const SIGNED_OUT_WRITES = new Set([
  '/auth/login',
  '/auth/signup',
  '/auth/password-reset/request',
  '/auth/password-reset/confirm',
  '/auth/verify-email',
]);

/** Whether this gateway lets anyone make an account (its page says so: see the page route). */
export const signUpOpen = (): boolean =>
  document.querySelector('meta[name="gw-sign-up"]')?.getAttribute('content') === 'open';

export async function request<T>(
  method: string,
  path: string,
  body?: unknown,
  extraHeaders: Record<string, string> = {},
): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json', ...extraHeaders };
  if (body !== undefined) headers['content-type'] = 'application/json';
  // signing in and signing up come before a session (and its token)
  if (method !== 'GET' && !SIGNED_OUT_WRITES.has(path)) headers['x-csrf-token'] = await csrf();
  let response: Response;
  try {
    response = await fetch(path, {
      method,
      headers,
      credentials: 'same-origin',
      ...(body !== undefined && { body: JSON.stringify(body) }),
    });
  } catch {
    throw new ApiError(0, 'network', 'The gateway could not be reached. Check your connection.');
  }
  const text = await response.text();
  let parsed: unknown = null;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    parsed = null;
  }
  if (response.ok) return parsed as T;
  const error = (parsed as { error?: { code?: string; message?: string } } | null)?.error;
  const failure = new ApiError(
    response.status,
    error?.code ?? `http_${response.status}`,
    error?.message ?? `The gateway answered ${response.status}.`,
    response.headers.has('retry-after'),
  );
  if (failure.code === 'gw_csrf_token_invalid') forgetCsrfToken();
  if (failure.code === 'gw_session_required' && path !== '/auth/session') {
    window.dispatchEvent(new Event(SESSION_ENDED));
  }
  throw failure;
}

/** A new Idempotency-Key: 128 random bits. */
export const newIdempotencyKey = (): string =>
  typeof crypto.randomUUID === 'function'
    ? crypto.randomUUID()
    : Array.from(crypto.getRandomValues(new Uint8Array(16)), (byte) =>
        byte.toString(16).padStart(2, '0'),
      ).join('');

/**
 * The Idempotency-Key of each create submitted but not answered yet, by what it sends. The
 * same submission sent again (a double click, a retry after the network failed) reuses its
 * key, so the gateway makes it once and answers the first answer again (decision 372). An
 * answer ends the submission: the next one, even with the same fields, is a new create. Kept
 * after an answer only when an earlier send of this submission may have taken effect (decision
 * 559): no answer; any 5xx (a proxy's 502/503/504, or the gateway's 500: its create may have
 * committed before it broke); any 409 gw_conflict, with Retry-After or not — every conflict the
 * idempotency layer answers says a first request with this key ran or runs (still processed,
 * committed and unanswered, succeeded with an answer it cannot replay), and a gateway of the
 * previous version in a rolling deploy answers a committed create's retry so, without
 * Retry-After; a new key now would make it twice (decision 379). A handler's own gw_conflict
 * freed the key (a refusal commits nothing), so sending it again runs the create as a new key
 * would. gw_idempotency_key_reused and every other refusal end the submission.
 */
const unansweredCreates = new Map<string, string>();
/** The submissions on their way: the same one sent again meanwhile waits for this answer. */
const createsInFlight = new Map<string, Promise<unknown>>();

const outcomeUnknown = (error: unknown): boolean =>
  error instanceof ApiError &&
  (error.status === 0 ||
    error.status >= 500 ||
    (error.status === 409 && (error.code === 'gw_conflict' || error.retryLater)));

function create<T>(path: string, body: unknown = {}): Promise<T> {
  const submission = `${path}\n${JSON.stringify(body)}`;
  const inFlight = createsInFlight.get(submission);
  if (inFlight) return inFlight as Promise<T>;
  const key = unansweredCreates.get(submission) ?? newIdempotencyKey();
  unansweredCreates.set(submission, key);
  const sent = request<T>('POST', path, body, { 'idempotency-key': key }).then(
    (made) => {
      unansweredCreates.delete(submission);
      return made;
    },
    (error: unknown) => {
      if (!outcomeUnknown(error)) unansweredCreates.delete(submission);
      throw error;
    },
  );
  createsInFlight.set(submission, sent);
  const settled = (): void => {
    createsInFlight.delete(submission);
  };
  sent.then(settled, settled);
  return sent;
}

export const api = {
  get: <T>(path: string) => request<T>('GET', path),
  post: <T>(path: string, body?: unknown, headers?: Record<string, string>) =>
    request<T>('POST', path, body ?? {}, headers),
  /** A POST that makes something (an app, a key, a top-up…): sent with an Idempotency-Key. */
  create,
  patch: <T>(path: string, body: unknown) => request<T>('PATCH', path, body),
  put: <T>(path: string, body?: unknown) => request<T>('PUT', path, body ?? {}),
  delete: <T>(path: string) => request<T>('DELETE', path),
};

export const canManage = (role: Role): boolean => role === 'owner' || role === 'admin';
