// What a mock vendor does with one request: decided by the API key it receives (so any number
// of gateway instances see the same behaviour) and by directives in the last user message.

export type MockFault =
  'rate_limit' | 'quota' | 'server_error' | 'overloaded' | 'cut_stream' | 'bad_key';

export interface MockDirectives {
  readonly fault: MockFault | undefined;
  readonly outputTokens: number | undefined;
  readonly latencyMs: number | undefined;
}

const FAULTS: readonly MockFault[] = [
  'rate_limit',
  'quota',
  'server_error',
  'overloaded',
  'cut_stream',
];

/** Directives like `mock:fault=cut_stream mock:output_tokens=5 mock:latency_ms=200`. */
export function readDirectives(lastUserText: string): MockDirectives {
  const fault = /mock:fault=(\w+)/.exec(lastUserText)?.[1] as MockFault | undefined;
  const outputTokens = /mock:output_tokens=(\d+)/.exec(lastUserText)?.[1];
  const latencyMs = /mock:latency_ms=(\d+)/.exec(lastUserText)?.[1];
  return {
    fault: fault && FAULTS.includes(fault) ? fault : undefined,
    outputTokens: outputTokens === undefined ? undefined : Number(outputTokens),
    latencyMs: latencyMs === undefined ? undefined : Number(latencyMs),
  };
}

let flakyCalls = 0;

/**
 * The fault a key forces: `mock-bad…` is refused, `mock-429…` always rate-limited,
 * `mock-quota…` out of quota, `mock-flaky…` rate-limited on every other call.
 */
export function faultForKey(apiKey: string | undefined): MockFault | undefined {
  if (apiKey === undefined || apiKey === '' || apiKey.startsWith('mock-bad')) return 'bad_key';
  if (apiKey.startsWith('mock-429')) return 'rate_limit';
  if (apiKey.startsWith('mock-quota')) return 'quota';
  if (apiKey.startsWith('mock-flaky')) {
    flakyCalls += 1;
    return flakyCalls % 2 === 1 ? 'rate_limit' : undefined;
  }
  return undefined;
}

/** The text of the last user message (string content or its text parts). */
export function lastUserText(messages: unknown): string {
  if (!Array.isArray(messages)) return '';
  for (let index = messages.length - 1; index >= 0; index -= 1) {
    const message = messages[index] as { role?: unknown; content?: unknown } | null;
    if (message?.role !== 'user') continue;
    if (typeof message.content === 'string') return message.content;
    if (Array.isArray(message.content)) {
      return message.content
        .map((part: { text?: unknown }) => (typeof part?.text === 'string' ? part.text : ''))
        .join(' ');
    }
    return '';
  }
  return '';
}
