// Small HTTP helpers for tests: JSON requests and SSE reading with undici's fetch.

/**
 * The spec's error body (SPEC.md, Errors): `code` and `message`, and the fields some answers
 * add — the limit or cap a refusal hit (src/billing/rejections.ts), the messages protocol's
 * `type`, and the allowance refusal's shape (`code` '403', the gw code, the same message and
 * the amounts under `provider_specific_fields`). A type, not an interface, so that it converts
 * to and from `Record<string, unknown>` as the helpers' default body does.
 */
export type ErrorBody = {
  error: {
    code: string;
    message: string;
    rate_limit_scope?: string;
    cap_scope?: string;
    type?: string;
    provider_specific_fields?: {
      error: { code: string; message: string; params: Record<string, string> };
    };
  };
};

export interface JsonResponse<T = Record<string, unknown>> {
  readonly status: number;
  readonly headers: Headers;
  readonly body: T;
}

export async function postJson<T = Record<string, unknown>>(
  url: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<JsonResponse<T>> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: JSON.parse(text) as T };
}

export async function getJson<T = Record<string, unknown>>(
  url: string,
  headers: Record<string, string> = {},
): Promise<JsonResponse<T>> {
  const response = await fetch(url, { headers });
  return { status: response.status, headers: response.headers, body: (await response.json()) as T };
}

/** Posts and reads the whole SSE body; `data` lists each event's data field in order. */
export async function postSse(
  url: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Headers; raw: string; data: string[] }> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  let raw = '';
  try {
    raw = await response.text();
  } catch {
    // a stream cut mid-way: keep what arrived
  }
  const data = raw
    .split('\n\n')
    .filter((block) => block.trim() !== '')
    .map((block) =>
      block
        .split('\n')
        .filter((line) => line.startsWith('data:'))
        .map((line) => line.slice(5).trimStart())
        .join('\n'),
    );
  return { status: response.status, headers: response.headers, raw, data };
}

export const bearer = (key: string): Record<string, string> => ({ authorization: `Bearer ${key}` });
