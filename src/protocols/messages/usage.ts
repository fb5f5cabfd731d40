// Reads token usage, and the tier the vendor served at, from messages-protocol answers and
// stream events.
import { EventRelay } from '../common/event-relay.js';
import {
  ServedTierTracker,
  unpricedTiers,
  type ServedTierField,
  type UnpricedTier,
} from '../common/served-tiers.js';
import { isTokenCount, withOutput, type PromptTokens, type TokenUsage } from '../common/usage.js';
import { isJsonContainer, isJsonObject } from '../../json-shapes.js';

interface UsageShape {
  input_tokens?: unknown;
  cache_creation_input_tokens?: unknown;
  cache_read_input_tokens?: unknown;
  /** The cache writes by how long they are kept: `ephemeral_1h_input_tokens`, `…5m…`. */
  cache_creation?: unknown;
  output_tokens?: unknown;
  /** Uses of the vendor's server tools: `web_search_requests` (decision 327). */
  server_tool_use?: unknown;
}

/** The fields of the cache writes' split by how long they are kept (`cache_creation`). */
const SPLIT_PARTS = ['ephemeral_5m_input_tokens', 'ephemeral_1h_input_tokens'] as const;

/** The usage fields that make up the prompt (promptTokens). */
const PROMPT_PARTS = [
  'input_tokens',
  'cache_creation_input_tokens',
  'cache_read_input_tokens',
] as const;

/** What a usage object names for a count the vendor may leave out (decision 328). */
const UNREADABLE = Symbol('unreadable');
type NamedCount = number | typeof UNREADABLE | undefined;

/** The count, undefined when not named (absent or null), UNREADABLE when not a count. */
function namedCount(value: unknown): NamedCount {
  if (value === undefined || value === null) return undefined;
  return isTokenCount(value) ? value : UNREADABLE;
}

/** The same for `field` of an object the vendor may leave out: an odd object is unreadable. */
function namedNestedCount(parent: unknown, field: string): NamedCount {
  if (parent === undefined || parent === null) return undefined;
  return isJsonObject(parent) ? namedCount(parent[field]) : UNREADABLE;
}

/** The count `field` of an object nested in a usage object, if it is one well-formed. */
function nestedCount(parent: unknown, field: string): number | undefined {
  const named = namedNestedCount(parent, field);
  return typeof named === 'number' ? named : undefined;
}

/** The web searches a usage object names (undefined when it names none well-formed). */
const webSearches = (usage: UsageShape): number | undefined =>
  nestedCount(usage.server_tool_use, 'web_search_requests');

/**
 * Whether a usage object names a billed count it cannot be read from: a cache part, the
 * one-hour writes or the web searches, named but not a count. Reading one as none would
 * under-bill; such a usage object is malformed as a whole, as one without `input_tokens` is,
 * and the request is charged as if the vendor had reported nothing (decision 328).
 */
function namesMalformedCount(usage: UsageShape): boolean {
  return [
    namedCount(usage.cache_creation_input_tokens),
    namedCount(usage.cache_read_input_tokens),
    ...SPLIT_PARTS.map((field) => namedNestedCount(usage.cache_creation, field)),
    namedNestedCount(usage.server_tool_use, 'web_search_requests'),
  ].includes(UNREADABLE);
}

/** A cache part of the prompt: 0 when the vendor did not name it (or sent null). */
const cachePart = (value: unknown): number => (isTokenCount(value) ? value : 0);

/**
 * The prompt of a usage object: the vendor reports it in three parts, all billed —
 * `input_tokens` (after the last cache breakpoint), `cache_creation_input_tokens` (written to
 * its prompt cache) and `cache_read_input_tokens` (read from it). A client's `cache_control`
 * moves nearly all of its prompt out of `input_tokens`; charging that alone let a prompt of
 * any size pass for a few tokens (decision 321). The cache parts are priced apart (decision
 * 324). Undefined when `input_tokens` is missing or malformed.
 */
function promptTokens(usage: UsageShape): PromptTokens | undefined {
  if (!isTokenCount(usage.input_tokens)) return undefined;
  // The writes are their split's sum (the vendor bills the split): never read below it when
  // the total is missing or smaller (0 of either when not named).
  const [fiveMinutes, oneHour] = SPLIT_PARTS.map(
    (field) => nestedCount(usage.cache_creation, field) ?? 0,
  ) as [number, number];
  const cacheWriteTokens = Math.max(
    cachePart(usage.cache_creation_input_tokens),
    fiveMinutes + oneHour,
  );
  const cacheReadTokens = cachePart(usage.cache_read_input_tokens);
  return {
    inputTokens: usage.input_tokens + cacheWriteTokens + cacheReadTokens,
    cacheWriteTokens,
    cacheWrite1hTokens: oneHour,
    cacheReadTokens,
  };
}

/**
 * How a messages-protocol vendor says it served a call, in the usage object (a JSON answer's,
 * and a stream's `message_start` and `message_delta`): `service_tier` (`priority` and `batch`
 * bill at other rates), `speed` (`fast`: several times the token rates) and `inference_geo`
 * (`us`: a premium; `not_available` is a model that cannot be pinned, served and billed as
 * `global`). gw prices the standard tier, speed and geography (decision 342).
 */
const SERVED_TIERS: readonly ServedTierField[] = [
  { field: 'service_tier', standard: ['standard'], known: ['priority', 'batch'] },
  { field: 'speed', standard: ['standard'], known: ['fast'] },
  { field: 'inference_geo', standard: ['global', 'not_available'], known: ['us'] },
];

/** The tiers a whole `message` object's usage names, if gw's prices do not cover them. */
export function readMessagesUnpricedTiers(payload: unknown): UnpricedTier[] | undefined {
  if (!isJsonContainer(payload)) return undefined;
  return unpricedTiers(SERVED_TIERS, (payload as { usage?: unknown }).usage);
}

/** Usage of a whole `message` object, if present and well-formed. */
export function readMessagesUsage(payload: unknown): TokenUsage | undefined {
  if (!isJsonContainer(payload)) return undefined;
  const usage = (payload as { usage?: UsageShape }).usage;
  if (!usage || !isTokenCount(usage.output_tokens) || namesMalformedCount(usage)) return undefined;
  const prompt = promptTokens(usage);
  if (prompt === undefined) return undefined;
  return withOutput(prompt, usage.output_tokens, webSearches(usage) ?? 0);
}

/**
 * Accumulates usage over a stream: the prompt's parts arrive in `message_start`, the output
 * count in each `message_delta` (cumulative; it may name prompt parts again, which then
 * replace those seen). Complete once a message_delta has been seen.
 */
export class MessagesStreamUsage {
  /** The cache writes' split seen so far, each the last well-formed count the vendor sent. */
  private readonly split: Partial<Record<(typeof SPLIT_PARTS)[number], number>> = {};
  /** The prompt's parts seen so far, each the last well-formed count the vendor sent. */
  private readonly prompt: UsageShape = { cache_creation: this.split };
  private outputTokens: number | undefined;
  /** The web searches named so far (cumulative, like the output count). */
  private webSearchRequests = 0;
  /**
   * The billed counts the last event naming them named unreadable (decision 328). Each count is
   * cumulative, the last one named is the one billed: a later event naming it well-formed
   * replaces it, one naming it malformed leaves the stream without a report, whatever came
   * before (an earlier count is not the billed one).
   */
  private readonly unreadable = new Set<string>();
  /**
   * The web searches the stream began (`server_tool_use` blocks named `web_search`): what a
   * stream that ends without a report is charged for, as its output is counted (decision 327).
   * A search runs only after its block, so none the vendor ran before the stream ended is
   * missed.
   */
  searchesSeen = 0;
  /** The tier, speed and geography the usage objects named (message_start names them). */
  readonly servedTier = new ServedTierTracker(SERVED_TIERS);

  observe(event: {
    type?: unknown;
    message?: { usage?: UsageShape };
    usage?: UsageShape;
    content_block?: { type?: unknown; name?: unknown };
  }): void {
    if (event.type === 'content_block_start') {
      const block = event.content_block;
      if (block?.type === 'server_tool_use' && block.name === 'web_search') this.searchesSeen += 1;
    } else if (event.type === 'message_start' && isJsonObject(event.message?.usage)) {
      this.observePrompt(event.message.usage);
    } else if (event.type === 'message_delta' && isJsonObject(event.usage)) {
      const usage = event.usage;
      this.observeCount('output_tokens', namedCount(usage.output_tokens), (count) => {
        this.outputTokens = count;
      });
      this.observePrompt(usage);
    }
  }

  /** A count an event may name: kept when well-formed, noted unreadable when not. */
  private observeCount(part: string, named: NamedCount, keep: (count: number) => void): void {
    if (named === undefined) return;
    if (named === UNREADABLE) {
      this.unreadable.add(part);
    } else {
      keep(named);
      this.unreadable.delete(part);
    }
  }

  /** The counts message_start and message_delta may both name (cumulative, like the output). */
  private observePrompt(usage: UsageShape): void {
    this.servedTier.observe(usage as Readonly<Record<string, unknown>>);
    const searches = namedNestedCount(usage.server_tool_use, 'web_search_requests');
    this.observeCount('server_tool_use', searches, (count) => {
      this.webSearchRequests = count;
    });
    for (const part of PROMPT_PARTS) {
      this.observeCount(part, namedCount(usage[part]), (count) => {
        this.prompt[part] = count;
      });
    }
    // The split's counts are parts too: a split that does not name one leaves the one seen
    // before (message_delta may name the split again, or only some of it).
    for (const field of SPLIT_PARTS) {
      const named = namedNestedCount(usage.cache_creation, field);
      this.observeCount(`cache_creation.${field}`, named, (count) => {
        this.split[field] = count;
      });
    }
  }

  /** The prompt from `message_start`, known before the output count. */
  get promptSeen(): PromptTokens | undefined {
    // A usage naming a billed count unreadable is malformed as a whole (decision 328).
    return this.unreadable.size > 0 ? undefined : promptTokens(this.prompt);
  }

  get usage(): TokenUsage | undefined {
    const prompt = this.promptSeen;
    if (prompt === undefined || this.outputTokens === undefined) return undefined;
    return withOutput(prompt, this.outputTokens, this.webSearchRequests);
  }
}

/** A relay of a messages-protocol stream: its usage is what the stream's events reported. */
export abstract class MessagesUsageRelay extends EventRelay {
  protected readonly tracker = new MessagesStreamUsage();

  get usage(): TokenUsage | undefined {
    return this.tracker.usage;
  }

  get reportedPrompt(): PromptTokens | undefined {
    return this.tracker.promptSeen;
  }

  get countedWebSearches(): number {
    return this.tracker.searchesSeen;
  }

  get unpricedTiers(): UnpricedTier[] | undefined {
    return this.tracker.servedTier.unpricedTiers;
  }
}
