// A vendor's response body as undici hands it over: read whole, read up to a bound, or relayed
// chunk by chunk. Reading from the socket pauses while chunks wait unread (backpressure) and
// resumes when the reader asks for more. No Node stream and no AbortSignal per request:
// undici's request()/Readable path cost about twice the CPU per call (bench/RESULTS.md).
//
// The reader gets every chunk that has arrived as one Buffer, not one read per chunk: a vendor
// sends each SSE event as its own HTTP chunk, and when the loop is late a socket holds many.
// One chunk per read made the relay write to the client once per chunk, a send(2) each,
// where a Node Readable (the bare passthrough) hands over everything buffered at once: under
// load the gateway made ~4 writes for each of the passthrough's (decision 323).

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

/**
 * The most a reader is handed at once. Chunks undici parses while a reader waits are held
 * until it takes them, so past this the socket is paused as if nobody were reading.
 */
export const MAX_BATCH_BYTES = 64 * 1024;

export class UpstreamBody implements AsyncIterable<Buffer> {
  private queued: Buffer[] = [];
  private queuedBytes = 0;
  private ended = false;
  private failure: unknown = undefined;
  private waiter: Waiter | undefined;
  private paused = false;
  private deliveryScheduled = false;

  constructor(private readonly source: BodySource) {}

  /**
   * From the undici handler: a chunk arrived. undici parses a whole socket read in one run,
   * calling this once per HTTP chunk; a waiting reader gets them all together just after
   * that run (a microtask), not the first alone.
   */
  push(chunk: Buffer): void {
    this.queued.push(chunk);
    this.queuedBytes += chunk.length;
    if (this.waiter !== undefined) {
      if (!this.deliveryScheduled) {
        this.deliveryScheduled = true;
        queueMicrotask(this.deliverQueued);
      }
      if (this.queuedBytes < MAX_BATCH_BYTES) return;
    }
    // Nobody is reading right now (or a reader's batch is full): stop reading the socket
    // until somebody asks for more.
    if (!this.paused) {
      this.paused = true;
      this.source.pause();
    }
  }

  /** From the undici handler: the body is complete (after whatever is still queued). */
  end(): void {
    this.ended = true;
    if (this.queued.length > 0) return; // the delivery or the next read hands them over first
    const waiter = this.waiter;
    this.waiter = undefined;
    waiter?.resolve({ value: undefined, done: true });
  }

  /** From the undici handler: the body failed (timeout, reset, abort), after what is queued. */
  fail(error: unknown): void {
    this.failure = error;
    if (this.queued.length > 0) return;
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
    if (this.queued.length > 0) return Promise.resolve({ value: this.takeQueued(), done: false });
    if (this.failure !== undefined) return Promise.reject(this.failure);
    if (this.ended) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve, reject) => {
      // Waiting first: resuming may deliver the next chunks (or the end) at once.
      this.waiter = { resolve, reject };
      if (this.paused) {
        this.paused = false;
        this.source.resume();
      }
    });
  }

  /** What arrived while a reader waited, handed over once undici's run has ended. */
  private readonly deliverQueued = (): void => {
    this.deliveryScheduled = false;
    const waiter = this.waiter;
    if (waiter === undefined || this.queued.length === 0) return;
    this.waiter = undefined;
    waiter.resolve({ value: this.takeQueued(), done: false });
  };

  private takeQueued(): Buffer {
    const chunks = this.queued;
    const bytes = this.queuedBytes;
    this.queued = [];
    this.queuedBytes = 0;
    return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, bytes);
  }
}
