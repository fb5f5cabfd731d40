// Bounds how hard cache misses can hit the database: at most `maxRunning` loads at once, at
// most `maxWaiting` queued behind them; a load beyond that is refused at once (the caller
// answers 503) instead of queueing without bound. Negative entries stop a repeated unknown
// key; this stops a flood of distinct ones, which no cache can.
export class LoadGateFull extends Error {
  constructor() {
    super('too many uncached lookups in flight');
    this.name = 'LoadGateFull';
  }
}

export class LoadGate {
  private running = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(
    private readonly maxRunning: number,
    private readonly maxWaiting: number,
  ) {}

  /** Runs `load` when a slot is free; rejects with LoadGateFull when the queue is full. */
  async run<T>(load: () => Promise<T>): Promise<T> {
    if (this.running >= this.maxRunning) {
      if (this.waiting.length >= this.maxWaiting) throw new LoadGateFull();
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    } else {
      this.running += 1;
    }
    try {
      return await load();
    } finally {
      const next = this.waiting.shift();
      // The slot passes straight to the next waiter; otherwise it is freed.
      if (next) next();
      else this.running -= 1;
    }
  }
}
