// How late the event loop runs: the signal for shedding new requests (decision 335). A timer
// ticks every INTERVAL_MS; a tick that comes late says the loop was busy (or the process was
// not scheduled) for that long. Between ticks, the time since the last one says how long the
// turn in progress has kept the loop: a request read after a long stall is judged by it, even
// before the overdue tick runs (libuv reads sockets before it runs the next turn's timers).
import { performance } from 'node:perf_hooks';

const INTERVAL_MS = 50;

export class LoopLag {
  private lastTickAt = performance.now();
  private lastLateMs = 0;
  private readonly timer: NodeJS.Timeout;

  constructor() {
    this.timer = setInterval(() => this.tick(), INTERVAL_MS);
    this.timer.unref();
  }

  /** How late the loop runs now (ms): the last tick's delay, or the running turn's if longer. */
  lateMs(): number {
    const sinceDue = performance.now() - this.lastTickAt - INTERVAL_MS;
    return Math.max(this.lastLateMs, sinceDue);
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private tick(): void {
    const now = performance.now();
    this.lastLateMs = Math.max(0, now - this.lastTickAt - INTERVAL_MS);
    this.lastTickAt = now;
  }
}
