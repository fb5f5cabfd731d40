// A provider: one vendor the gateway can send requests to. It names the wire protocol it speaks
// natively (src/protocols: the protocol builds each client protocol's exchange with it), its
// request headers, how its credentials are checked, how its failures are classified, and the
// model policy a new credential of it gets. Adding a vendor is a folder with one
// `defineProvider` call and a line in registry.ts.
import type { WireEndpoint, WireProtocol } from '../../protocols/common/exchange.js';
import { upstreamError } from '../../protocols/common/upstream-errors.js';
import { credentialCooldownMs } from './credential-failures.js';

/**
 * How a vendor bills the prompt tokens its prompt cache writes (for five minutes, for an hour)
 * and reads, as multiples of the model's input rate (decimal strings, exact): a model's cache
 * rate left unset in the catalogue is this multiple of its input rate (decision 324).
 */
export interface PromptCacheRatios {
  readonly write: string;
  readonly write1h: string;
  readonly read: string;
}

/** A vendor whose prompt cache (if any) bills its tokens as any other prompt tokens. */
export const NO_CACHE_PRICING: PromptCacheRatios = { write: '1', write1h: '1', read: '1' };

export interface Provider extends WireEndpoint {
  /** 'vendor_a': lower case letters, digits and _, the prefix of its models' ids. */
  readonly id: string;
  /** How its prompt cache is billed, relative to the input rate. */
  readonly promptCache: PromptCacheRatios;
  /**
   * What it bills per web search its server tool makes (decimal, the settlement currency; gw
   * sells it at that price), or null when gw meters none of its (decision 327).
   */
  readonly webSearchPrice: string | null;
  /** The wire protocol it speaks natively. */
  readonly protocol: WireProtocol;
  /** The environment variables of its system route, derived from the id. */
  readonly env: { readonly baseUrl: string; readonly apiKey: string };
  /** The model policy a new credential gets when none is given: all of its models. */
  readonly defaultModelPolicy: readonly string[];
  /** Headers of the credential check (an authenticated GET /v1/models). */
  validationHeaders(secret: string): Record<string, string>;
}

export interface ProviderDefinition<Id extends string> {
  readonly id: Id;
  readonly protocol: WireProtocol;
  /** Default: NO_CACHE_PRICING. */
  readonly promptCache?: PromptCacheRatios;
  /** Default: null. */
  readonly webSearchPrice?: string;
  headers(apiKey: string | undefined, clientVersion: string | undefined): Record<string, string>;
  /** Default: the request headers without content-type. */
  validationHeaders?(secret: string): Record<string, string>;
  /** Default: the gateway's mapping of status codes (upstream-errors.ts). */
  upstreamError?: Provider['upstreamError'];
  /** Default: rate limits, quota, overload and rejected keys rest the credential. */
  credentialCooldownMs?: Provider['credentialCooldownMs'];
}

const PROVIDER_ID = /^[a-z][a-z0-9_]{0,31}$/;

/** The provider's environment variable for `suffix`: vendor_a → VENDOR_A_BASE_URL. */
export function providerEnvVar(id: string, suffix: 'BASE_URL' | 'API_KEY'): string {
  return `${id.toUpperCase()}_${suffix}`;
}

export function defineProvider<const Id extends string>(
  definition: ProviderDefinition<Id>,
): Provider & { readonly id: Id } {
  const { id, headers } = definition;
  if (!PROVIDER_ID.test(id)) throw new Error(`provider id ${id} must match ${PROVIDER_ID.source}`);
  return {
    id,
    protocol: definition.protocol,
    promptCache: definition.promptCache ?? NO_CACHE_PRICING,
    webSearchPrice: definition.webSearchPrice ?? null,
    headers,
    env: { baseUrl: providerEnvVar(id, 'BASE_URL'), apiKey: providerEnvVar(id, 'API_KEY') },
    defaultModelPolicy: [`${id}/*`],
    validationHeaders:
      definition.validationHeaders ??
      ((secret) => {
        const { 'content-type': _json, ...rest } = headers(secret, undefined);
        return rest;
      }),
    upstreamError:
      definition.upstreamError ??
      ((status, bodyText, retryAfter) => upstreamError(id, status, bodyText, retryAfter)),
    credentialCooldownMs: definition.credentialCooldownMs ?? credentialCooldownMs,
  };
}
