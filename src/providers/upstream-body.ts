// A vendor's response body as undici hands it over: read whole, read up to a bound, or relayed
// chunk by chunk. Reading from the socket pauses while chunks wait unread (backpressure) and
// resumes when the reader asks for more. No Node stream and no AbortSignal per request:
// undici's request()/Readable path cost about twice the CPU per call (bench/RESULTS.md).

/** What the body needs from the undici request it belongs to. */
export interface BodySource {
  pause(): void;
  resume(): void;
  abort(): void;
}

type Waiter = {
  resolve: (result: IteratorResult<Buffer>) => void;
  reject: (error: unknown) => void;
};

export class UpstreamBody implements AsyncIterable<Buffer> {
  private readonly queued: Buffer[] = [];
  private ended = false;
  private failure: unknown = undefined;
  private waiter: Waiter | undefined;
  private paused = false;

  constructor(private readonly source: BodySource) {}

  /** From the undici handler: a chunk arrived. */
  push(chunk: Buffer): void {
    const waiter = this.waiter;
    if (waiter) {
      this.waiter = undefined;
      waiter.resolve({ value: chunk, done: false });
      return;
    }
    this.queued.push(chunk);
    // Nobody is reading right now: stop reading the socket until somebody does.
    if (!this.paused) {
      this.paused = true;
      this.source.pause();
    }
  }

  /** From the undici handler: the body is complete. */
  end(): void {
    this.ended = true;
    const waiter = this.waiter;
    this.waiter = undefined;
    waiter?.resolve({ value: undefined, done: true });
  }

  /** From the undici handler: the body failed (timeout, reset, abort). */
  fail(error: unknown): void {
    this.failure = error;
    const waiter = this.waiter;
    this.waiter = undefined;
    waiter?.reject(error);
  }

  /** Stops reading and closes the vendor connection. */
  destroy(): void {
    this.source.abort();
  }

  /** The whole body. */
  async bytes(): Promise<Buffer> {
    const chunks: Buffer[] = [];
    for await (const chunk of this) chunks.push(chunk);
    return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
  }

  /**
   * At most `maxBytes` of the body (the rest is not read: the connection is closed). Never
   * rejects: a body that fails half-way gives what arrived (an error answer cut short is
   * still an error answer).
   */
  async bounded(maxBytes: number): Promise<Buffer> {
    const chunks: Buffer[] = [];
    let size = 0;
    try {
      for await (const chunk of this) {
        if (size + chunk.length > maxBytes) {
          chunks.push(chunk.subarray(0, maxBytes - size));
          break;
        }
        chunks.push(chunk);
        size += chunk.length;
      }
    } catch {
      // what arrived is what there is
    }
    return Buffer.concat(chunks);
  }

  [Symbol.asyncIterator](): AsyncIterator<Buffer> {
    return {
      next: () => this.next(),
      return: () => {
        // The reader stopped early (break): nobody will read the rest.
        if (!this.ended && this.failure === undefined) this.destroy();
        return Promise.resolve({ value: undefined, done: true });
      },
    };
  }

  private next(): Promise<IteratorResult<Buffer>> {
    const chunk = this.queued.shift();
    if (chunk) return Promise.resolve({ value: chunk, done: false });
    if (this.failure !== undefined) return Promise.reject(this.failure);
    if (this.ended) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve, reject) => {
      // Waiting first: resuming may deliver the next chunk (or the end) at once.
      this.waiter = { resolve, reject };
      if (this.paused) {
        this.paused = false;
        this.source.resume();
      }
    });
  }
}
