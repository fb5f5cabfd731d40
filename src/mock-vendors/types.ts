// Shapes shared by the mock vendors' protocol modules and their uWS server.

import type { JsonObject } from '../json-shapes.js';

export type { JsonObject };

/** Request headers the mock reads, copied while the uWS request was still valid. */
export interface MockHeaders {
  readonly authorization: string;
  readonly xApiKey: string;
  /** True when an `anthropic-version` or `vendor-version` header was sent (vendor_a clients). */
  readonly messagesClient: boolean;
}

/** A fault the mock plays instead of (or in the middle of) a normal answer. */
export type MockFault =
  | 'missing_key'
  | 'bad_key'
  | 'rate_limit'
  | 'quota'
  | 'server_error'
  | 'overloaded'
  | 'cut_stream'
  | 'invalid_json'
  | 'error_event'
  | 'huge_event';

/** Faults played inside a success answer (a cut, a broken body, an error event mid-stream). */
export type MockPlayedFault = 'cut_stream' | 'invalid_json' | 'error_event' | 'huge_event';

/** Faults answered with an error body. */
export type MockErrorFault = Exclude<MockFault, MockPlayedFault>;

/** An error answer, serialised once: errors are static, so they cost nothing per request. */
export interface MockError {
  /** Full uWS status line, e.g. `429 Too Many Requests`. */
  readonly status: string;
  readonly headers: readonly (readonly [string, string])[];
  readonly body: string;
}

/**
 * How the answer says the call was served, when a test asks for a tier other than the
 * vendor's standard one (`mock:service_tier=…`, `mock:speed=…`, `mock:inference_geo=…`).
 */
export interface MockServedAs {
  readonly serviceTier: string | undefined;
  readonly speed: string | undefined;
  readonly inferenceGeo: string | undefined;
}

/** What to generate for one completion request, decided before any protocol rendering. */
export interface AnswerPlan {
  readonly body: JsonObject;
  readonly model: string;
  readonly inputTokens: number;
  /** Text tokens to generate when the answer is text. */
  readonly outputTokens: number;
  /** True when max tokens, not the wanted length, cut the text short. */
  readonly limitedByMax: boolean;
  /** The max tokens the request allows, if it set one (a longer tool call becomes text). */
  readonly maxTokens: number | undefined;
  /** The tier, speed and geography the answer names (undefined: the vendor's standard). */
  readonly servedAs: MockServedAs;
}

/** One vendor's wire format, as the server needs it. */
export interface MockProtocol {
  /** The response header carrying the request id (`request-id` or `x-request-id`). */
  readonly requestIdHeader: string;
  apiKey(headers: MockHeaders): string | undefined;
  /** The input texts whose tokens are the request's input usage. */
  inputTexts(body: JsonObject): string[];
  /** A 400 for a body the real vendor would refuse, else undefined. */
  invalidRequest(body: JsonObject): MockError | undefined;
  /** `retryAfterSeconds`: a rate limit's `retry-after` (the `mock:retry_after` directive). */
  error(fault: MockErrorFault, retryAfterSeconds?: number): MockError;
  /** Answers to malformed requests: body not a JSON object, unknown route, body too large. */
  readonly invalidJson: MockError;
  readonly notFound: MockError;
  readonly tooLarge: MockError;
  /** The non-streaming answer body. */
  completion(plan: AnswerPlan): string;
  /** The streaming answer: the SSE events in order, with where the generated output sits. */
  streamEvents(plan: AnswerPlan): StreamEvents;
  /** The vendor's error event inside a stream (the error_event fault ends a stream with it). */
  readonly streamErrorEvent: string;
  /** One text delta of HUGE_EVENT_TEXT_BYTES (the huge_event fault ends a stream with it). */
  hugeEvent(): string;
}

export interface StreamEvents {
  readonly events: readonly string[];
  /** Index of the first event that carries generated output (pacing starts there). */
  readonly firstTokenEvent: number;
  /** How many events from firstTokenEvent carry output (one token or argument fragment each). */
  readonly tokenEventCount: number;
}
