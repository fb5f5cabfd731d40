// The process entry: parses config and either runs the primary over GATEWAY_WORKERS workers
// (src/workers.ts) or runs this process as the gateway. The gateway's composition
// (src/gateway.ts) is loaded only where requests are served: a primary that loaded it would
// hold the whole gateway's code, its threads and its token table for nothing.
import { pathToFileURL } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { loadConfig, type Config } from './config.js';
import { createLogger } from './log.js';
import { isGatewayWorker, runPrimary, workerCount } from './workers.js';

async function main(): Promise<void> {
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
  if (workers > 1 && !isGatewayWorker()) return runPrimary(config, logger, workers);
  const { runGatewayProcess } = await import('./gateway.js');
  await runGatewayProcess(config, logger);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  void main();
}
