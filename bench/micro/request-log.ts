// Micro-benchmark: the CPU one request-log line costs the event loop (pino serialising and
// writing the line), with every line kept and with sampling, against the gateway's CPU per
// request (run: node dist/bench/micro/request-log.js [lines] > /dev/null; results on stderr).
import { createRequestLog, type FinishedRequest } from '../../src/http/request-log.js';
import { createLogger, createRequestLogger } from '../../src/log.js';

const lines = Number(process.argv[2] ?? 200_000);
// The gateway's request logger (stdout, which goes to /dev/null), and for comparison its
// general logger with the redaction list.
const loggers = {
  'request logger': createRequestLogger(createLogger('info')),
  'redacting logger': createLogger('info'),
};
const request: FinishedRequest = {
  requestId: '0193a0b2-7c55-7c3e-9a1e-3f4b5c6d7e8f',
  method: 'POST',
  route: '/v1/chat/completions',
  status: 200,
  durationMs: 3,
  annotations: {
    model: 'vendor_b/gpt-4o-mini',
    orgId: 'org_hC182hwywkyT0UZAgomf',
    productUserId: 'pu_k4frjhpoWb3fQKYYznMX',
  },
};

function nsPerRequest(logger: ReturnType<typeof createLogger>, sampleRate: number): number {
  const log = createRequestLog(logger, sampleRate);
  for (let i = 0; i < 10_000; i += 1) log(request); // warm-up
  const started = process.hrtime.bigint();
  for (let i = 0; i < lines; i += 1) log(request);
  return Number(process.hrtime.bigint() - started) / lines;
}

for (const [name, logger] of Object.entries(loggers)) {
  for (const rate of [1, 0.1, 0]) {
    const micros = nsPerRequest(logger, rate) / 1000;
    process.stderr.write(
      `${name}, REQUEST_LOG_SAMPLE_RATE=${rate}: ${micros.toFixed(2)} µs per request\n`,
    );
  }
}
