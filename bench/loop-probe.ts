// A bench-only preload (`node --import ./dist/bench/loop-probe.js …`) that measures a process's
// event-loop delay inside the process, so a loop too busy to answer a /metrics scrape is still
// measured. Cluster workers inherit it (cluster.fork passes the primary's execArgv).
// SIGUSR2 toggles a window: the first starts it (the histogram is reset), the second writes the
// window's delay percentiles to LOOP_PROBE_DIR/<pid>.json. Without LOOP_PROBE_DIR it does nothing.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';

const dir = process.env.LOOP_PROBE_DIR;
if (dir) {
  // 10 ms resolution (prom-client's default): a delay shorter than that is not seen.
  const histogram = monitorEventLoopDelay({ resolution: 10 });
  histogram.enable();
  let windowStartedMs: number | undefined;
  process.on('SIGUSR2', () => {
    if (windowStartedMs === undefined) {
      histogram.reset();
      windowStartedMs = Date.now();
      return;
    }
    const ms = (ns: number): number => Math.round(ns / 1e4) / 100;
    writeFileSync(
      join(dir, `${process.pid}.json`),
      JSON.stringify({
        pid: process.pid,
        window_ms: Date.now() - windowStartedMs,
        samples: histogram.count,
        p50_ms: ms(histogram.percentile(50)),
        p99_ms: ms(histogram.percentile(99)),
        max_ms: ms(histogram.max),
      }),
    );
    windowStartedMs = undefined;
  });
}
