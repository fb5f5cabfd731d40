// Shapes shared by the mock vendors' protocol modules and their server.

export interface MockRequest {
  readonly body: Record<string, unknown>;
  readonly inputTokens: number;
  /** How many text tokens to generate. */
  readonly outputTokens: number;
  /** True when max tokens, not the wanted length, decided outputTokens. */
  readonly limitedByMax: boolean;
}

export interface MockAnswer {
  /** The non-streaming body. */
  readonly json: Record<string, unknown>;
  /** The streaming body, one SSE event per entry (the last is the terminal event). */
  readonly events: readonly string[];
}

export interface MockError {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: Record<string, unknown>;
}
