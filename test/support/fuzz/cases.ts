// What one fuzz input is and what it must get back. Every input must get an answer below 500
// and no hang; some carry a stricter expectation taken from issue 10.
import type { ClientBehaviour, Outcome } from './raw-http.js';

export interface Expectation {
  readonly description: string;
  readonly accepts: (outcomes: readonly Outcome[]) => boolean;
}

export interface FuzzCase {
  /** 'POST /v1/chat/completions' (or 'unrouted' / 'framing'). */
  readonly route: string;
  /** What makes the input hostile, by name only: never a key or a raw value. */
  readonly shape: string;
  readonly payload: Buffer;
  readonly behaviour?: ClientBehaviour;
  /** Answers to read (pipelined requests). */
  readonly answers?: number;
  readonly headRequest?: boolean;
  /** The server may drop the connection without answering (framing its parser refuses). */
  readonly mayClose?: boolean;
  readonly expectation?: Expectation;
}

export const answeredWith =
  (predicate: (status: number) => boolean) =>
  (outcomes: readonly Outcome[]): boolean =>
    outcomes.every((outcome) => outcome.kind === 'answered' && predicate(outcome.status));

/** Framing that disagrees must be refused: a 400, or the connection closed unanswered. */
export const refusedFraming: Expectation = {
  description: 'framing headers that disagree answer 400 (or the connection is closed)',
  accepts: (outcomes) =>
    outcomes.length > 0 &&
    outcomes.every(
      (outcome) =>
        outcome.kind === 'closed' ||
        outcome.kind === 'timeout' ||
        (outcome.kind === 'answered' && outcome.status === 400),
    ),
};

/** Amounts no exact money layer can hold (past int64 nano-units) are refused, never granted. */
export const refusedAmount: Expectation = {
  description: 'an amount past int64 nano-units is refused with a 4xx, never granted',
  accepts: answeredWith((status) => status >= 400 && status < 500),
};
