// The charging policy: the one place that decides what a request is charged (input and output
// tokens) and how its usage record says it ended, from the way it ended. Pure: the pipeline
// reports what happened, this function decides; docs/charging.md holds the same table.
//
// The rule behind every row: the client pays for what the vendor bills for work the client
// asked for, and never for a call that was not made or an answer the gateway could not use.
// - Nothing reached the vendor (not dispatched, connection refused): nothing is charged.
// - The vendor refused (an error status, a failover chain that ran out): vendors do not bill
//   an error answer, nothing is charged.
// - The vendor read the prompt but the client left before the answer: the input is charged
//   (the vendor bills it; the client chose to leave). A timeout or a network error before any
//   answer is the vendor's or the gateway's failure, not the client's: nothing is charged.
// - The vendor answered but the answer broke (cut short, an error event, invalid JSON, the
//   client left half-way, an event too large to relay): the input (as reported, else the estimate) and the output the
//   client received (as reported, else counted from the relayed text; none when nothing usable
//   was relayed) are charged. The gateway cutting it at the end of its shutdown grace is such a
//   break: what was relayed is charged; cut before any answer, nothing is.
// - The instance serving it died (killed, out of memory) before it settled: what reached the
//   vendor and the client is unknown, and the failure is the gateway's: nothing is charged; the
//   record (written by another instance once the holds lapse) keeps the request in the ledger.
// - Completed: what the vendor reported; without a report, the input estimate and, for a JSON
//   answer, the whole held output (never under-bill silently), for a stream the counted text.
import type { UsageStatus } from '../ledger/usage-record.js';
import {
  uncachedPrompt,
  withOutput,
  type PromptTokens,
  type TokenUsage,
} from '../protocols/common/usage.js';

/**
 * Why a request ended, as its usage record says (column `end_reason`) and as the metrics' label
 * `end_reason` names it (docs/operations.md's alerts select by these).
 */
export const END_REASONS = [
  'completed',
  'completed_without_usage',
  'client_gone_before_dispatch',
  'client_aborted_before_answer',
  'client_aborted_during_answer',
  'network_error',
  'upstream_timeout',
  'vendor_error_status',
  'failover_exhausted',
  'vendor_invalid_json',
  'vendor_error_event',
  'vendor_event_too_large',
  'truncated',
  'gateway_error',
  'gateway_shutdown',
  'gateway_lost',
] as const;

export type EndReason = (typeof END_REASONS)[number];

/** What the vendor's answer told us about usage before it ended (any part may be missing). */
export interface ObservedUsage {
  /** Full usage as the vendor reported it. */
  readonly reported?: TokenUsage | undefined;
  /** The prompt the vendor named before its full usage (vendor_a's message_start). */
  readonly reportedPrompt?: PromptTokens | undefined;
  /** Output tokens counted from the text relayed to the client (when usage never came). */
  readonly countedOutputTokens?: number | undefined;
  /** Web searches a stream began (when usage never came): vendor_a's server_tool_use blocks. */
  readonly countedWebSearches?: number | undefined;
}

/** How a request ended, as the pipeline observed it. */
export type RequestEnd =
  /** No vendor call was made: the client left first, or building the call failed. */
  | { readonly kind: 'not_dispatched'; readonly cause: 'client_gone' | 'gateway_error' }
  /** Sent, but no answer (status line) came back. */
  | {
      readonly kind: 'no_answer';
      readonly cause: 'client_aborted' | 'network_error' | 'timeout' | 'shutdown';
    }
  /** The vendor answered with an error status (after failover, when there was one). */
  | {
      readonly kind: 'vendor_refused';
      readonly upstreamStatus: number;
      /** True when BYOK failover ran out of credentials and the wallet could not take over. */
      readonly failoverExhausted: boolean;
    }
  /** A success status, then the answer broke before it was complete. */
  | {
      readonly kind: 'answer_broken';
      readonly upstreamStatus: number;
      readonly cause:
        | 'client_aborted'
        | 'network_error'
        | 'timeout'
        | 'truncated'
        | 'invalid_json'
        | 'vendor_error_event'
        /** The vendor sent an SSE event past MAX_SSE_EVENT_BYTES: the gateway ended it. */
        | 'event_too_large'
        /** The gateway cut it at the end of its shutdown grace. */
        | 'shutdown';
      readonly usage: ObservedUsage;
    }
  /** The instance serving it died before settling it (settled by another, from its draft). */
  | { readonly kind: 'instance_lost' }
  /** The answer completed (a whole JSON body, or a stream's terminal event). */
  | {
      readonly kind: 'completed';
      readonly upstreamStatus: number;
      readonly stream: boolean;
      readonly usage: ObservedUsage;
    };

/** What the policy needs to know about the request itself. */
export interface ChargeContext {
  /**
   * The prompt as admission counted it, billed as the part the hold priced it at (a cache
   * write when the body asked for one and it costs more: decision 324).
   */
  readonly estimatedPrompt: PromptTokens;
  /** Output tokens held for, over every choice requested. */
  readonly heldOutputTokens: number;
  /** Web searches held for: what the body's web search tools allow (decision 327). */
  readonly heldWebSearches: number;
}

/** What a request is charged: its tokens (the prompt's cache parts priced apart), and how it
 * ended. */
export interface Charge extends TokenUsage {
  readonly status: UsageStatus;
  readonly reason: EndReason;
  readonly upstreamStatus: number | null;
}

const NO_PROMPT = uncachedPrompt(0);

/** A charge, its fields always in one order (one object shape for all). */
function charge(
  status: UsageStatus,
  reason: EndReason,
  upstreamStatus: number | null,
  prompt: PromptTokens,
  outputTokens: number,
  webSearchRequests = 0,
): Charge {
  return { status, reason, upstreamStatus, ...withOutput(prompt, outputTokens, webSearchRequests) };
}

const NO_ANSWER_REASON = {
  client_aborted: 'client_aborted_before_answer',
  network_error: 'network_error',
  timeout: 'upstream_timeout',
  shutdown: 'gateway_shutdown',
} as const;

const BROKEN_REASON = {
  client_aborted: 'client_aborted_during_answer',
  network_error: 'network_error',
  timeout: 'upstream_timeout',
  truncated: 'truncated',
  invalid_json: 'vendor_invalid_json',
  vendor_error_event: 'vendor_error_event',
  event_too_large: 'vendor_event_too_large',
  shutdown: 'gateway_shutdown',
} as const;

export function chargeFor(end: RequestEnd, context: ChargeContext): Charge {
  switch (end.kind) {
    case 'not_dispatched':
      return end.cause === 'client_gone'
        ? charge('client_aborted', 'client_gone_before_dispatch', null, NO_PROMPT, 0)
        : charge('incomplete', 'gateway_error', null, NO_PROMPT, 0);
    case 'no_answer': {
      const clientLeft = end.cause === 'client_aborted';
      return charge(
        clientLeft ? 'client_aborted' : end.cause === 'shutdown' ? 'incomplete' : 'upstream_error',
        NO_ANSWER_REASON[end.cause],
        null,
        clientLeft ? context.estimatedPrompt : NO_PROMPT,
        0,
        // The vendor may have searched before it answered.
        clientLeft ? context.heldWebSearches : 0,
      );
    }
    case 'vendor_refused':
      return charge(
        'upstream_error',
        end.failoverExhausted ? 'failover_exhausted' : 'vendor_error_status',
        end.upstreamStatus,
        NO_PROMPT,
        0,
      );
    case 'answer_broken':
      return charge(
        end.cause === 'client_aborted' ? 'client_aborted' : 'incomplete',
        BROKEN_REASON[end.cause],
        end.upstreamStatus,
        promptOf(end.usage, context),
        // Only what reached the client: nothing usable was relayed from invalid JSON.
        end.cause === 'invalid_json'
          ? 0
          : (end.usage.reported?.outputTokens ?? end.usage.countedOutputTokens ?? 0),
        searchesOf(end.usage, context),
      );
    case 'instance_lost':
      return charge('incomplete', 'gateway_lost', null, NO_PROMPT, 0);
    case 'completed': {
      const reported = end.usage.reported;
      return charge(
        'completed',
        reported ? 'completed' : 'completed_without_usage',
        end.upstreamStatus,
        promptOf(end.usage, context),
        reported?.outputTokens ??
          (end.stream
            ? (end.usage.countedOutputTokens ?? context.heldOutputTokens)
            : context.heldOutputTokens),
        searchesOf(end.usage, context),
      );
    }
  }
}

/**
 * The web searches charged: as the vendor reported them, else as a stream began them (the
 * client saw each), else all that were held for (a JSON answer shows none before it ends).
 */
function searchesOf(usage: ObservedUsage, context: ChargeContext): number {
  return usage.reported?.webSearchRequests ?? usage.countedWebSearches ?? context.heldWebSearches;
}

/** The prompt charged: as the vendor reported it, else the estimate. */
function promptOf(usage: ObservedUsage, context: ChargeContext): PromptTokens {
  return usage.reported ?? usage.reportedPrompt ?? context.estimatedPrompt;
}
