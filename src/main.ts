// The process entry: parses config and either runs the primary over GATEWAY_WORKERS workers
// (src/workers.ts) or runs this process as the gateway. The gateway's composition
// (src/gateway.ts) is loaded only where requests are served: a primary that loaded it would
// hold the whole gateway's code, its threads and its token table for nothing.
import { pathToFileURL } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import type { Config } from './config.js';

const STOP_SIGNALS = ['SIGTERM', 'SIGINT'] as const;

/**
 * Until the primary's or the gateway's own handlers take over, a SIGTERM or SIGINT finds
 * nothing started (config, modules loading): exit 0 rather than Node's default (killed by the
 * signal, exit 143). Returns the hand-over, to call once the new handlers are installed, so
 * that no moment is left without one.
 */
function exitOnStopSignalsUntilHandedOver(): () => void {
  const exitUnstarted = (): void => process.exit(0);
  for (const signal of STOP_SIGNALS) process.on(signal, exitUnstarted);
  return () => {
    for (const signal of STOP_SIGNALS) process.off(signal, exitUnstarted);
  };
}

async function main(): Promise<void> {
  const handOver = exitOnStopSignalsUntilHandedOver();
  // Loaded after the handlers, which so cover their loading too.
  const { configurationWarnings, loadConfig } = await import('./config.js');
  const { createLogger } = await import('./log.js');
  const { isGatewayWorker, runPrimary, workerCount } = await import('./workers.js');
  let config: Config;
  try {
    config = loadConfig();
  } catch (error) {
    process.stderr.write(`gw: ${(error as Error).message}\n`);
    process.exit(78); // EX_CONFIG
  }
  // Before the heap grows: every isolate of the process (its worker threads too) reads it.
  if (config.HEAP_GROWTH_PERCENT > 0) {
    setFlagsFromString(`--heap-growing-percent=${config.HEAP_GROWTH_PERCENT}`);
  }
  const logger = createLogger(config.LOG_LEVEL);
  const workers = workerCount(config);
  // Once per gateway: by the primary, or by the one process serving alone.
  if (!isGatewayWorker()) {
    for (const warning of configurationWarnings(config)) logger.warn(warning);
  }
  if (workers > 1 && !isGatewayWorker()) {
    runPrimary(config, logger, workers); // installs its handlers before it returns
    return handOver();
  }
  const { runGatewayProcess } = await import('./gateway.js');
  const running = runGatewayProcess(config, logger); // installs its handlers before its first await
  handOver();
  await running;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  void main();
}
