// How late the event loop runs: the signal for shedding new requests (decision 335). A timer
// ticks every INTERVAL_MS; a tick that comes late says the loop was busy (or the process was
// not scheduled) for that long. Between ticks, the time since the last one says how long the
// turn in progress has kept the loop. A stall's lateness is held for as long as the stall
// lasted: the requests that arrived during it are read over the turns that follow (a new
// connection is accepted in one turn and read in the next, after another tick), and each of
// them has waited the whole stall.
import { performance } from 'node:perf_hooks';

const INTERVAL_MS = 50;

export class LoopLag {
  private lastTickAt = performance.now();
  /** The largest lateness still held, and until when it is. */
  private heldLateMs = 0;
  private heldUntil = 0;
  private readonly timer: NodeJS.Timeout;

  constructor() {
    this.timer = setInterval(() => this.tick(), INTERVAL_MS);
    this.timer.unref();
  }

  /** How late the loop runs now (ms): a stall still held, or the running turn's if longer. */
  lateMs(): number {
    const now = performance.now();
    const sinceDue = now - this.lastTickAt - INTERVAL_MS;
    return Math.max(now < this.heldUntil ? this.heldLateMs : 0, sinceDue);
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private tick(): void {
    const now = performance.now();
    const late = Math.max(0, now - this.lastTickAt - INTERVAL_MS);
    this.lastTickAt = now;
    if (late >= this.heldLateMs || now >= this.heldUntil) {
      this.heldLateMs = late;
      this.heldUntil = now + late;
    }
  }
}
