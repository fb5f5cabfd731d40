// Judges each answer and folds the failures into classes a reader can act on: route, what
// came back, and (for 500s) the error the gateway logged for that request id, with its
// source location. Keys never appear: shapes are names, and logged text is redacted.
import type { FuzzCase } from './cases.js';
import type { Exchange, Outcome } from './raw-http.js';

export interface Failure {
  readonly route: string;
  readonly shape: string;
  readonly outcome: string;
  readonly reason: string;
  readonly cause: string | undefined;
}

const KEY_PATTERN = /gw_(svc_|oauth_|client_secret_|client_)?[0-9A-Za-z]{16,}/g;
export const redact = (text: string): string => text.replace(KEY_PATTERN, 'gw_<redacted>');

function describeOutcome(outcome: Outcome): string {
  if (outcome.kind !== 'answered') return outcome.kind;
  const code =
    /"code":"([a-z_]+)"/.exec(outcome.body)?.[1] ??
    /"error":\{"type":"([a-z_]+)"/.exec(outcome.body)?.[1];
  return `${outcome.status}${code ? ` ${code}` : ''}`;
}

export const describeOutcomes = (outcomes: readonly Outcome[]): string =>
  outcomes.map(describeOutcome).join(', ') || 'nothing';

/** Why an exchange fails the suite, or undefined when it passes. */
export function judge(fuzzCase: FuzzCase, result: Exchange): string | undefined {
  for (const outcome of result.outcomes) {
    if (outcome.kind === 'answered' && outcome.status >= 500) return 'answered 5xx';
    if (outcome.kind === 'timeout' && !fuzzCase.mayClose) return 'no answer in time (hang)';
    if (outcome.kind === 'closed' && !fuzzCase.mayClose) return 'connection dropped unanswered';
  }
  if (fuzzCase.expectation && !fuzzCase.expectation.accepts(result.outcomes))
    return `expected: ${fuzzCase.expectation.description}`;
  return undefined;
}

export function failureOf(
  fuzzCase: FuzzCase,
  result: Exchange,
  reason: string,
  causes: ReadonlyMap<string, string>,
): Failure {
  const requestId = result.outcomes
    .map((outcome) => (outcome.kind === 'answered' ? outcome.requestId : undefined))
    .find((id) => id !== undefined);
  return {
    route: fuzzCase.route,
    shape: fuzzCase.shape,
    outcome: describeOutcomes(result.outcomes),
    reason,
    cause: requestId ? causes.get(requestId) : undefined,
  };
}

/** requestId → "message @ src/file.ts:line" for every unhandled error the gateway logged. */
export function loggedCauses(gatewayOutput: string): Map<string, string> {
  const causes = new Map<string, string>();
  for (const line of gatewayOutput.split('\n')) {
    if (!line.includes('"requestId"') || !line.includes('"err"')) continue;
    try {
      const entry = JSON.parse(line) as {
        requestId?: string;
        err?: { message?: string; stack?: string };
      };
      if (!entry.requestId || !entry.err) continue;
      const frame = /\/(src\/[^\s:)]+:\d+)/.exec(entry.err.stack ?? '')?.[1];
      causes.set(
        entry.requestId,
        redact(`${(entry.err.message ?? '').slice(0, 160)}${frame ? ` @ ${frame}` : ''}`),
      );
    } catch {
      // not a JSON log line
    }
  }
  return causes;
}

/** Distinct error-level messages the gateway logged, with counts (settle failures and the like). */
export function loggedErrors(gatewayOutput: string): string[] {
  const counts = new Map<string, number>();
  for (const line of gatewayOutput.split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      const entry = JSON.parse(line) as {
        level?: number;
        msg?: string;
        err?: { message?: string; stack?: string };
      };
      if ((entry.level ?? 0) < 50) continue;
      const frame = /\/(src\/[^\s:)]+:\d+)/.exec(entry.err?.stack ?? '')?.[1];
      const key = redact(
        `${entry.msg ?? ''}: ${(entry.err?.message ?? '').slice(0, 120)}${frame ? ` @ ${frame}` : ''}`,
      );
      counts.set(key, (counts.get(key) ?? 0) + 1);
    } catch {
      // not a JSON log line
    }
  }
  return [...counts].map(([key, count]) => `${count}× ${key}`);
}

/** One line per failure class: route, reason, outcome and cause, with up to 3 example shapes. */
export function summarize(failures: readonly Failure[]): string[] {
  const classes = new Map<string, { count: number; shapes: Set<string> }>();
  for (const failure of failures) {
    const key = `${failure.route} | ${failure.reason} | ${failure.outcome}${
      failure.cause ? ` | cause: ${failure.cause}` : ''
    }`;
    const entry = classes.get(key) ?? { count: 0, shapes: new Set<string>() };
    entry.count += 1;
    if (entry.shapes.size < 3) entry.shapes.add(failure.shape);
    classes.set(key, entry);
  }
  return [...classes]
    .sort((a, b) => b[1].count - a[1].count)
    .map(
      ([key, { count, shapes }]) =>
        `${count}× ${key} | e.g. ${[...shapes].map((shape) => shape.slice(0, 120)).join(' ; ')}`,
    );
}
