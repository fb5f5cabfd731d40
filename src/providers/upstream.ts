// Keep-alive connection pools to the vendors, one per origin.
import { Pool, type Dispatcher } from 'undici';

export interface UpstreamRequest {
  /** Origin plus optional path prefix, without the vendor's /v1 (e.g. http://127.0.0.1:9000). */
  readonly baseUrl: string;
  readonly path: string;
  readonly headers: Record<string, string>;
  readonly body: string;
  readonly signal: AbortSignal;
}

export class UpstreamClient {
  private readonly pools = new Map<string, Pool>();

  constructor(private readonly timeoutMs: number) {}

  request(request: UpstreamRequest): Promise<Dispatcher.ResponseData> {
    // The base URL may carry a path prefix (a proxy's); the vendor path goes after it.
    const base = new URL(request.baseUrl);
    const prefix = base.pathname.replace(/\/+$/, '');
    return this.pool(base.origin).request({
      method: 'POST',
      path: prefix + request.path,
      headers: request.headers,
      body: request.body,
      signal: request.signal,
      headersTimeout: this.timeoutMs,
      bodyTimeout: this.timeoutMs,
    });
  }

  async close(): Promise<void> {
    await Promise.all([...this.pools.values()].map((pool) => pool.close()));
    this.pools.clear();
  }

  private pool(origin: string): Pool {
    let pool = this.pools.get(origin);
    if (!pool) {
      pool = new Pool(origin, { connections: 256, pipelining: 1, keepAliveTimeout: 30_000 });
      this.pools.set(origin, pool);
    }
    return pool;
  }
}
