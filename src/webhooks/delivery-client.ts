// One webhook attempt over HTTP (undici): POST the body with its headers, follow no redirect,
// give up after the timeout, read at most a small snippet of the answer. Connections go only
// to addresses the target policy approves, checked on each connection with the address the
// connection then uses (target-policy.ts: guardedLookup). It never throws: every outcome is an
// AttemptResult for the delivery log.
import { performance } from 'node:perf_hooks';
import { Agent, request } from 'undici';
import {
  checkTargetUrl,
  guardedLookup,
  TargetRefusedError,
  type Resolver,
  type TargetPolicy,
} from './target-policy.js';

/** The most of an answer's body that is read (and kept in the delivery log). */
export const SNIPPET_BYTES = 1024;
const USER_AGENT = 'gw-webhooks/1';

export interface AttemptResult {
  /** The HTTP status; null when no answer came. */
  readonly statusCode: number | null;
  readonly latencyMs: number;
  readonly snippet: string;
  /** Why no usable answer came (timeout, refused address, connection error); null otherwise. */
  readonly error: string | null;
}

export class DeliveryClient {
  private readonly agent: Agent;

  constructor(
    private readonly policy: TargetPolicy,
    private readonly timeoutMs: number,
    resolve?: Resolver,
  ) {
    this.agent = new Agent({
      connect: { lookup: guardedLookup(policy, resolve), timeout: timeoutMs },
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
      keepAliveTimeout: 30_000,
    });
  }

  async post(url: string, body: string, headers: Record<string, string>): Promise<AttemptResult> {
    const started = performance.now();
    const elapsed = (): number => Math.round(performance.now() - started);
    // The stored URL is checked again: the policy may be stricter than when it was saved.
    const checked = checkTargetUrl(url, this.policy);
    if (typeof checked === 'string') {
      return { statusCode: null, latencyMs: 0, snippet: '', error: `refused: url ${checked}` };
    }
    const signal = AbortSignal.timeout(this.timeoutMs);
    try {
      const response = await request(checked, {
        method: 'POST',
        dispatcher: this.agent,
        headers: {
          'content-type': 'application/json',
          'user-agent': USER_AGENT,
          ...headers,
        },
        body,
        signal,
      });
      const snippet = await readSnippet(response.body);
      return { statusCode: response.statusCode, latencyMs: elapsed(), snippet, error: null };
    } catch (error) {
      return {
        statusCode: null,
        latencyMs: elapsed(),
        snippet: '',
        error: describe(error, this.timeoutMs),
      };
    }
  }

  async close(): Promise<void> {
    await this.agent.close();
  }
}

/** The first SNIPPET_BYTES of a body; the rest is never read (the connection is dropped). */
async function readSnippet(body: AsyncIterable<Buffer> & { destroy(): void }): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of body) {
      chunks.push(chunk);
      size += chunk.length;
      if (size >= SNIPPET_BYTES) break;
    }
  } catch {
    // what was read is kept; an answer's body failing midway does not change its status
  } finally {
    if (size >= SNIPPET_BYTES) body.destroy();
  }
  // Postgres text refuses NUL.
  return Buffer.concat(chunks)
    .subarray(0, SNIPPET_BYTES)
    .toString('utf8')
    .replaceAll('\0', '\uFFFD');
}

/** A safe, short reason (never the URL: it may carry the receiver's own tokens). */
function describe(error: unknown, timeoutMs: number): string {
  const cause = (error as { cause?: unknown } | null)?.cause;
  const refused = [error, cause].find((value) => value instanceof TargetRefusedError);
  if (refused) return `refused: ${(refused as Error).message}`;
  const name = (error as { name?: string } | null)?.name;
  const code =
    (error as { code?: string } | null)?.code ?? (cause as { code?: string } | null)?.code;
  if (name === 'TimeoutError' || name === 'AbortError' || code?.includes('TIMEOUT') === true) {
    return `timeout: no answer within ${timeoutMs} ms`;
  }
  if (code === 'ECONNREFUSED') return 'connection refused';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return 'the host does not resolve';
  if (code === 'ECONNRESET' || code === 'UND_ERR_SOCKET') return 'connection reset';
  return code ? `network error (${code})` : 'network error';
}
