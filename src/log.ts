// Structured logs (pino). Nothing secret is logged: we never pass headers, bodies, prompts or
// completions to the logger, and the redaction list is a second line of defence.
import { pino, type DestinationStream, type Logger } from 'pino';

export type { Logger };

/**
 * The process's logger on stdout. Lines are written asynchronously: lines logged while a write
 * is under way go out together in the next one, instead of a synchronous write per line (a
 * system call per request with the request log on, ~15 µs of a proxied request's CPU). Pino
 * flushes what is pending when the process exits; a process killed with SIGKILL can lose the
 * lines of the write it was doing.
 */
export function createLogger(level: string, name = 'gw'): Logger {
  return pino(
    {
      name,
      level,
      redact: {
        paths: [
          'authorization',
          '*.authorization',
          'headers["x-api-key"]',
          '*.headers["x-api-key"]',
          'apiKey',
          '*.apiKey',
          'secret',
          '*.secret',
          'token',
          '*.token',
          'body',
          '*.body',
          'messages',
          '*.messages',
        ],
        censor: '[redacted]',
      },
    },
    pino.destination({ dest: 1, sync: false }),
  );
}

/**
 * The request log's own logger on the same destination as `logger`, without the redaction
 * list: its lines carry only fixed id fields (src/http/request-log.ts), and redaction doubled
 * the cost of each line (bench/RESULTS.md).
 */
export function createRequestLogger(logger: Logger, name = 'gw'): Logger {
  const destination = (logger as unknown as Record<symbol, DestinationStream>)[
    pino.symbols.streamSym
  ];
  return pino({ name, level: logger.level }, destination);
}
