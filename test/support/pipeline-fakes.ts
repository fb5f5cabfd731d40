// Fakes of the proxy pipeline's ports for unit tests: a scripted vendor (answers, failures, bodies
// that end or break), a recording settle, a client connection, and a ready admission.
import type { ApiKeyIdentity } from '../../src/auth/api-key-store.js';
import type { FailoverOutcome, FailoverRequest } from '../../src/billing/budget-store.js';
import { tokenRates, type CatalogModel } from '../../src/catalog/models.js';
import type { UpstreamExchange } from '../../src/protocols/common/exchange.js';
import { UpstreamBody } from '../../src/providers/upstream-body.js';
import type {
  UpstreamCall,
  UpstreamRequest,
  UpstreamResponse,
} from '../../src/providers/upstream.js';
import { vendorB } from '../../src/providers/vendor-b/provider.js';
import type { Admission } from '../../src/inference/admission.js';
import type { ProxyClient, ProxyPorts } from '../../src/inference/proxy.js';
import type { RequestOutcome } from '../../src/inference/settlement.js';
import { UnpricedTierLog } from '../../src/inference/unpriced-tiers.js';

export const identity: ApiKeyIdentity = {
  keyId: 'key_1',
  orgId: 'org_1',
  appId: 'app_1',
  appConnectionId: 'conn_1',
  active: true,
  modelPolicy: ['*'],
  requiresProductUser: false,
  creditMode: 'enforce',
  overrunPolicy: 'reject',
};

export const model: CatalogModel = {
  id: 'vendor_b/gpt-4o-mini',
  vendor: 'vendor_b',
  provider: vendorB,
  upstreamModel: 'gpt-4o-mini',
  cost: tokenRates('0.0000001', '0.0000004'),
  price: tokenRates('0.00000015', '0.0000006'),
  maxOutputTokens: 1000,
  supportsTools: true,
};

export function chatExchange(stream = false): UpstreamExchange {
  return vendorB.protocol.chat(vendorB, {
    body: { messages: [{ role: 'user', content: 'hi' }] },
    upstreamModel: 'gpt-4o-mini',
    maxTokens: 16384,
    stream,
    clientWantsUsage: false,
  });
}

export function admission(overrides: Partial<Admission<UpstreamExchange>> = {}) {
  return {
    requestId: 'req_1',
    identity,
    model,
    productUser: null,
    accounts: {
      orgId: 'org_1',
      appConnectionId: 'conn_1',
      walletPays: true,
      credentials: null,
      orgCap: null,
      connectionCap: null,
      user: null,
    },
    admittedAt: new Date(),
    estimatedPrompt: {
      inputTokens: 10,
      cacheWriteTokens: 0,
      cacheWrite1hTokens: 0,
      cacheReadTokens: 0,
    },
    maxOutputTokens: 100,
    heldOutputTokens: 100,
    heldWebSearches: 0,
    outputClamped: false,
    reservedNano: 61_500n,
    credentialId: null,
    call: chatExchange(),
    ...overrides,
  } satisfies Admission<UpstreamExchange>;
}

/** What the scripted vendor does with one call. */
export type VendorScript =
  /** A call that fails; `written: false`: before any byte of the request went out. */
  | { readonly fail: { code?: string; written?: boolean } }
  | {
      readonly status: number;
      readonly headers?: Record<string, string>;
      /** Body chunks, then the body ends, or breaks with `breakWith`. */
      readonly chunks: readonly string[];
      readonly breakWith?: { code?: string };
    };

/** A vendor that plays one script per call, in order, and records what it was sent. */
export class ScriptedVendor {
  readonly requests: UpstreamRequest[] = [];
  aborted = 0;

  constructor(private readonly scripts: VendorScript[]) {}

  request(request: UpstreamRequest): UpstreamCall {
    this.requests.push(request);
    const script = this.scripts.shift();
    if (!script) throw new Error('the scripted vendor ran out of answers');
    const abort = (): void => void (this.aborted += 1);
    const body = new UpstreamBody({ pause: () => undefined, resume: () => undefined, abort });
    const response: Promise<UpstreamResponse> =
      'fail' in script
        ? Promise.reject(Object.assign(new Error('upstream failed'), script.fail))
        : Promise.resolve({ statusCode: script.status, headers: script.headers ?? {}, body });
    if (!('fail' in script)) {
      queueMicrotask(() => {
        for (const chunk of script.chunks) body.push(Buffer.from(chunk));
        if (script.breakWith) body.fail(Object.assign(new Error('cut'), script.breakWith));
        else body.end();
      });
    }
    response.catch(() => undefined);
    return { response, abort, written: !('fail' in script) || script.fail.written !== false };
  }
}

/** A client connection that records what was written; `backpressureEvery` makes write() false. */
export class FakeClient implements ProxyClient {
  aborted = false;
  written: string[] = [];
  head: number | undefined;
  drains = 0;
  private abortListener: (() => void) | undefined;

  constructor(private readonly backpressureEvery = 0) {}

  onAborted(listener: () => void): void {
    this.abortListener = listener;
  }
  abort(): void {
    this.aborted = true;
    this.abortListener?.();
  }
  writeHead(status: number): void {
    this.head = status;
  }
  write(chunk: string | Uint8Array): boolean {
    this.written.push(typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8'));
    return this.backpressureEvery === 0 || this.written.length % this.backpressureEvery !== 0;
  }
  drained(): Promise<void> {
    this.drains += 1;
    return Promise.resolve();
  }
}

export interface RecordingPorts extends ProxyPorts {
  readonly settled: RequestOutcome[];
  readonly failovers: FailoverRequest[];
  readonly logged: unknown[];
}

export function fakePorts(
  vendor: ScriptedVendor,
  options: {
    failover?: (request: FailoverRequest) => FailoverOutcome;
    secrets?: Record<string, string>;
    countedOutputTokens?: number;
  } = {},
): RecordingPorts {
  const settled: RequestOutcome[] = [];
  const failovers: FailoverRequest[] = [];
  const logged: unknown[] = [];
  const logger = {
    info: (...args: unknown[]) => void logged.push(args),
    warn: (...args: unknown[]) => void logged.push(args),
  } as RecordingPorts['logger'];
  const nowMs = (): number => 1_000_000;
  return {
    upstream: vendor,
    failover: {
      failover: (request) => {
        failovers.push(request);
        return Promise.resolve(options.failover?.(request) ?? { kind: 'no_credential' });
      },
    },
    secrets: {
      secretOf: (_orgId, credentialId) => Promise.resolve(options.secrets?.[credentialId]),
    },
    systemRoutes: {
      vendor_b: { baseUrl: 'http://vendor-b.test', apiKey: 'system-key', mock: false },
    },
    logger,
    nowMs,
    unpricedTierLog: new UnpricedTierLog(logger, nowMs),
    outputCounter: { countOutput: () => Promise.resolve(options.countedOutputTokens ?? 0) },
    settle: (_admission, outcome) => {
      settled.push(outcome);
      return Promise.resolve();
    },
    settled,
    failovers,
    logged,
  };
}
