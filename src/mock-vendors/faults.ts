// Which fault a mock vendor plays for one request. Decided by the API key (so every gateway
// instance and test sees the same behaviour), by directives in the last user message (so tests
// can drive faults through a gateway that passes the body through), and by the fault-rate knob.
// The directives also set the answer's length, its latency, and the tier it says it served at.
import type {
  JsonObject,
  MockErrorFault,
  MockFault,
  MockPlayedFault,
  MockServedAs,
} from './types.js';
import { isJsonContainer } from '../json-shapes.js';

export interface MockDirectives {
  readonly fault: MockFault | undefined;
  readonly outputTokens: number | undefined;
  readonly latencyMs: number | undefined;
  /** The `retry-after` of a rate-limit answer, in seconds (default DEFAULT_RETRY_AFTER_S). */
  readonly retryAfterSeconds: number | undefined;
  readonly servedAs: MockServedAs;
}

/** The `retry-after` of a rate-limit answer that no directive lengthened. */
export const DEFAULT_RETRY_AFTER_S = 2;

/** The vendor's standard tier, speed and geography. */
const STANDARD_SERVICE: MockServedAs = {
  serviceTier: undefined,
  speed: undefined,
  inferenceGeo: undefined,
};

const NO_DIRECTIVES: MockDirectives = {
  fault: undefined,
  outputTokens: undefined,
  latencyMs: undefined,
  retryAfterSeconds: undefined,
  servedAs: STANDARD_SERVICE,
};

const DIRECTIVE_FAULTS: ReadonlySet<string> = new Set([
  'rate_limit',
  'quota',
  'server_error',
  'overloaded',
  'cut_stream',
  'invalid_json',
  'error_event',
  'huge_event',
]);

const FAULT_DIRECTIVE = /mock:fault=([a-z_]+)/;
const OUTPUT_TOKENS_DIRECTIVE = /mock:output_tokens=(\d+)/;
const LATENCY_DIRECTIVE = /mock:latency_ms=(\d+)/;
const RETRY_AFTER_DIRECTIVE = /mock:retry_after=(\d+)/;
// Lower-case words only: the value is written into the answer's JSON as it is.
const SERVICE_TIER_DIRECTIVE = /mock:service_tier=([a-z_]+)/;
const SPEED_DIRECTIVE = /mock:speed=([a-z_]+)/;
const INFERENCE_GEO_DIRECTIVE = /mock:inference_geo=([a-z_]+)/;

/**
 * Directives like `mock:fault=cut_stream mock:output_tokens=5 mock:latency_ms=200`,
 * `mock:retry_after=30` for a rate limit's `retry-after` (whether the directive or the key asked
 * for the rate limit), and `mock:service_tier=priority mock:speed=fast mock:inference_geo=us`
 * for the tier the answer names.
 */
export function readDirectives(text: string): MockDirectives {
  // Most requests carry none: one substring scan instead of the regexes.
  if (!text.includes('mock:')) return NO_DIRECTIVES;
  const fault = FAULT_DIRECTIVE.exec(text)?.[1];
  const outputTokens = OUTPUT_TOKENS_DIRECTIVE.exec(text)?.[1];
  const latencyMs = LATENCY_DIRECTIVE.exec(text)?.[1];
  const retryAfterSeconds = RETRY_AFTER_DIRECTIVE.exec(text)?.[1];
  return {
    fault: fault !== undefined && DIRECTIVE_FAULTS.has(fault) ? (fault as MockFault) : undefined,
    outputTokens: outputTokens === undefined ? undefined : Number(outputTokens),
    latencyMs: latencyMs === undefined ? undefined : Number(latencyMs),
    retryAfterSeconds: retryAfterSeconds === undefined ? undefined : Number(retryAfterSeconds),
    servedAs: {
      serviceTier: SERVICE_TIER_DIRECTIVE.exec(text)?.[1],
      speed: SPEED_DIRECTIVE.exec(text)?.[1],
      inferenceGeo: INFERENCE_GEO_DIRECTIVE.exec(text)?.[1],
    },
  };
}

/** The text of the last user message: its string content or its text parts, space-joined. */
export function lastUserText(body: JsonObject): string {
  const messages = body.messages;
  if (!Array.isArray(messages)) return '';
  for (let index = messages.length - 1; index >= 0; index -= 1) {
    const message: unknown = messages[index];
    if (!isJsonContainer(message)) continue;
    const { role, content } = message as { role?: unknown; content?: unknown };
    if (role !== 'user') continue;
    if (typeof content === 'string') return content;
    if (!Array.isArray(content)) return '';
    let text = '';
    for (const part of content) {
      const partText = (part as { text?: unknown } | null)?.text;
      if (typeof partText === 'string') text += text === '' ? partText : ` ${partText}`;
    }
    return text;
  }
  return '';
}

// One counter per process: `mock-flaky` keys fail on odd calls, succeed on even ones.
let flakyCalls = 0;

/**
 * The fault a key forces on a completion: no key → missing_key, `mock-bad…` → bad_key,
 * `mock-429…` → rate_limit, `mock-quota…` → quota, `mock-flaky…` → rate_limit every other call.
 */
export function faultForKey(apiKey: string | undefined): MockErrorFault | undefined {
  if (apiKey === undefined || apiKey === '') return 'missing_key';
  if (!apiKey.startsWith('mock-')) return undefined;
  if (apiKey.startsWith('mock-bad')) return 'bad_key';
  if (apiKey.startsWith('mock-429')) return 'rate_limit';
  if (apiKey.startsWith('mock-quota')) return 'quota';
  if (apiKey.startsWith('mock-flaky')) {
    flakyCalls += 1;
    return flakyCalls % 2 === 1 ? 'rate_limit' : undefined;
  }
  return undefined;
}

/** Only the authentication part of the key behaviours (for models and count_tokens). */
export function authFaultForKey(apiKey: string | undefined): MockErrorFault | undefined {
  if (apiKey === undefined || apiKey === '') return 'missing_key';
  return apiKey.startsWith('mock-bad') ? 'bad_key' : undefined;
}

/**
 * Injects server errors into a share `rate` (0..1) of completions, spread evenly and
 * deterministically: an accumulator, not Math.random, so runs are reproducible.
 */
export function createFaultInjector(rate: number): () => MockErrorFault | undefined {
  if (rate <= 0) return () => undefined;
  let accumulated = 0;
  return () => {
    accumulated += rate;
    if (accumulated < 1) return undefined;
    accumulated -= 1;
    return 'server_error';
  };
}

const PLAYED_FAULTS: ReadonlySet<MockFault> = new Set<MockPlayedFault>([
  'cut_stream',
  'invalid_json',
  'error_event',
  'huge_event',
]);

/** True for faults played inside a success answer rather than answered with an error body. */
export function isPlayedFault(fault: MockFault): fault is MockPlayedFault {
  return PLAYED_FAULTS.has(fault);
}
