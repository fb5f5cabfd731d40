// A browser-like dashboard client for tests: keeps the session cookie it was given (a cookie
// jar of one), fetches the CSRF token, and sends the gateway's own Origin on writes.
import { randomUUID } from 'node:crypto';
import { runCliJson } from './processes.js';

export interface DashboardAnswer<T = Record<string, unknown>> {
  readonly status: number;
  readonly headers: Headers;
  readonly body: T;
}

export interface RequestOptions {
  /** false: no X-CSRF-Token header. */
  readonly csrf?: boolean;
  /** The Origin to send (null: none); the gateway's own by default. */
  readonly origin?: string | null;
  /** More headers (an Idempotency-Key). */
  readonly headers?: Readonly<Record<string, string>>;
}

export class DashboardClient {
  cookie: string | undefined;
  csrfToken: string | undefined;

  constructor(
    readonly baseUrl: string,
    /** The Origin a browser on the dashboard would send (the gateway's own). */
    readonly origin: string,
  ) {}

  async login(email: string, password: string): Promise<DashboardAnswer> {
    const answer = await this.request('POST', '/auth/login', { email, password }, { csrf: false });
    if (answer.status === 200) {
      this.csrfToken = undefined;
      const token = await this.request<{ csrf_token: string }>('GET', '/auth/csrf');
      this.csrfToken = token.body.csrf_token;
    }
    return answer;
  }

  get<T = Record<string, unknown>>(path: string): Promise<DashboardAnswer<T>> {
    return this.request<T>('GET', path);
  }

  post<T = Record<string, unknown>>(
    path: string,
    body?: unknown,
    options: RequestOptions = {},
  ): Promise<DashboardAnswer<T>> {
    return this.request<T>('POST', path, body, options);
  }

  async request<T = Record<string, unknown>>(
    method: string,
    path: string,
    body?: unknown,
    options: RequestOptions = {},
  ): Promise<DashboardAnswer<T>> {
    const headers: Record<string, string> = { ...options.headers };
    if (this.cookie) headers.cookie = this.cookie;
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (method !== 'GET') {
      const origin = options.origin === undefined ? this.origin : options.origin;
      if (origin !== null) headers.origin = origin;
      if (options.csrf !== false && this.csrfToken) headers['x-csrf-token'] = this.csrfToken;
    }
    const response = await fetch(`${this.baseUrl}${path}`, {
      method,
      headers,
      ...(body !== undefined && { body: JSON.stringify(body) }),
    });
    const setCookie = response.headers.get('set-cookie');
    if (setCookie) {
      const [pair] = setCookie.split(';');
      this.cookie = pair!.endsWith('=') ? undefined : pair;
    }
    const text = await response.text();
    return { status: response.status, headers: response.headers, body: JSON.parse(text) as T };
  }
}

/** The password every test dashboard user gets. */
export const TEST_PASSWORD = 'correct horse battery staple';

/** An e-mail no other test uses. */
export const uniqueEmail = (label: string): string =>
  `${label}-${Math.random().toString(36).slice(2, 10)}@example.com`;

/** A client signed in as `email` on `gateway`, sending the gateway's own (https) Origin. */
export async function signInTo(
  gateway: { readonly url: string; readonly port: number },
  email: string,
): Promise<DashboardClient> {
  const client = new DashboardClient(gateway.url, `https://127.0.0.1:${gateway.port}`);
  const answer = await client.login(email, TEST_PASSWORD);
  if (answer.status !== 200) throw new Error(`sign-in of ${email} answered ${answer.status}`);
  return client;
}

/** The same signed-in user, talking to another gateway (sessions live in the shared Redis). */
export function onGateway(
  client: DashboardClient,
  gateway: { readonly url: string; readonly port: number },
): DashboardClient {
  const moved = new DashboardClient(gateway.url, `https://127.0.0.1:${gateway.port}`);
  moved.cookie = client.cookie;
  moved.csrfToken = client.csrfToken;
  return moved;
}

/** `gw admin create-user` with the test password: a user of their own personal organization. */
export function createUser(
  env: Record<string, string>,
  email: string,
): Promise<{ id: string; personal_org_id: string }> {
  return runCliJson(['admin', 'create-user', '--email', email, '--password-stdin'], env, {
    stdin: TEST_PASSWORD,
  });
}

/** `gw admin create-user` with the test password, a member of `orgId` with `role`. */
export function createMember(
  env: Record<string, string>,
  email: string,
  orgId: string,
  role: string,
): Promise<{ id: string; personal_org_id: string }> {
  return runCliJson(
    [
      'admin',
      'create-user',
      '--email',
      email,
      '--password-stdin',
      '--org-id',
      orgId,
      '--role',
      role,
    ],
    env,
    { stdin: TEST_PASSWORD },
  );
}

/** A fresh Idempotency-Key (decision 372). */
export const newIdempotencyKey = (): string => `idem-${randomUUID()}`;

/** Request options that send `key` as the Idempotency-Key. */
export const withIdempotencyKey = (key: string): RequestOptions => ({
  headers: { 'idempotency-key': key },
});
