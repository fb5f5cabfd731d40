// The messages protocol's requests: path, headers, the protocol version header, and the cache
// writes a body asks for.
import { isJsonContainer } from '../../json-shapes.js';
import { oneOf, unpricedOptionRefusal, type PricedOption } from '../common/priced-options.js';
import type { PromptCacheWrite } from '../common/usage.js';

export const MESSAGES_PATH = '/v1/messages';
/** Sent upstream when the client did not name a protocol version. */
export const DEFAULT_MESSAGES_VERSION = '2023-06-01';

export function messagesHeaders(
  apiKey: string | undefined,
  version: string | undefined,
): Record<string, string> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'anthropic-version': version ?? DEFAULT_MESSAGES_VERSION,
  };
  if (apiKey !== undefined) headers['x-api-key'] = apiKey;
  return headers;
}

/**
 * The cache write a messages-protocol body may make the vendor bill: a `cache_control` member
 * anywhere in it (the top level, tools, system blocks, content blocks, nested tool results)
 * asks for one, kept an hour when its `ttl` is anything but five minutes (`"5m"`, the default).
 * A walk of the parsed body, so no spelling of the name in the JSON text escapes it (decision
 * 324).
 */
export function promptCacheWrite(body: unknown): PromptCacheWrite {
  let found: PromptCacheWrite = 'none';
  // Only containers are queued: a body of millions of scalars costs a glance at each.
  const pending: object[] = isJsonContainer(body) ? [body] : [];
  for (let value = pending.pop(); value !== undefined; value = pending.pop()) {
    const members: readonly unknown[] = Array.isArray(value) ? value : Object.values(value);
    if (!Array.isArray(value) && Object.hasOwn(value, 'cache_control')) {
      const control = (value as { cache_control?: unknown }).cache_control;
      const ttl = isJsonContainer(control) ? (control as { ttl?: unknown }).ttl : undefined;
      if (ttl !== undefined && ttl !== '5m') return 'write_1h';
      found = 'write';
    }
    for (const member of members) if (isJsonContainer(member)) pending.push(member);
  }
  return found;
}

/** The messages-protocol options a vendor bills beyond the catalogue's token rates. */
const PRICED_OPTIONS: readonly PricedOption[] = [
  {
    field: 'speed',
    priced: oneOf('standard'),
    reason: 'gw prices the standard speed only; the vendor bills a faster one at a premium',
  },
  {
    field: 'inference_geo',
    priced: oneOf('global'),
    reason: 'gw prices global inference only; the vendor bills a pinned geography at a premium',
  },
];

/**
 * Why a messages-protocol body would be billed beyond what gw charges for its tokens, or
 * undefined (decision 332): an option the vendor prices otherwise. Server tools are
 * `serverToolCosts`' to read.
 */
export function messagesOptionRefusal(body: Readonly<Record<string, unknown>>): string | undefined {
  return unpricedOptionRefusal(body, PRICED_OPTIONS);
}

/** Most searches one web search tool may allow through gw (its `max_uses`). */
export const MAX_WEB_SEARCH_USES = 1000;

/**
 * What a body's server tools may cost beyond tokens (decision 327): the web searches its web
 * search tools allow (`max_uses`, summed), or why the gateway refuses them. A web search tool
 * must name its `max_uses` (the hold covers every search before the call), and only a vendor
 * whose price per search gw knows (`meteredWebSearch`) may take one. Code execution, billed by
 * the vendor for its run time, is not metered and is refused. Other tools cost tokens only.
 */
export function serverToolCosts(
  tools: unknown,
  meteredWebSearch: boolean,
): { readonly webSearches: number } | { readonly refusal: string } {
  let webSearches = 0;
  if (!Array.isArray(tools)) return { webSearches };
  for (const [index, tool] of tools.entries()) {
    const type = isJsonContainer(tool) ? (tool as { type?: unknown }).type : undefined;
    if (typeof type !== 'string') continue;
    if (type.startsWith('code_execution_')) {
      return {
        refusal: `tools[${index}]: ${type} is billed by the vendor for its run time, which gw does not meter`,
      };
    }
    if (!type.startsWith('web_search_')) continue;
    if (!meteredWebSearch) {
      return {
        refusal: `tools[${index}]: ${type} is billed by the vendor per search, which gw does not meter for this model`,
      };
    }
    const uses = (tool as { max_uses?: unknown }).max_uses;
    if (
      !Number.isSafeInteger(uses) ||
      (uses as number) < 1 ||
      (uses as number) > MAX_WEB_SEARCH_USES
    ) {
      return {
        refusal: `tools[${index}].max_uses: required for web search, a whole number from 1 to ${MAX_WEB_SEARCH_USES} (every search is held for before the call)`,
      };
    }
    webSearches += uses as number;
  }
  return { webSearches };
}
