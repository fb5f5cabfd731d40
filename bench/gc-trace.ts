// What a target's young-generation collections promote while the load runs, read from V8's
// `--trace-gc-nvp` lines on its stdout: the bytes a request keeps alive past a scavenge. A
// count, not a time, so it holds on a busy machine where req/s does not; under 1 KB per request
// is the gateway's normal (docs/architecture.md, "What a request may leave behind").

/** One line of V8's `--trace-gc-nvp`, heard while recording. */
interface GcEvent {
  readonly isolate: string;
  readonly scavenge: boolean;
  readonly pauseMs: number;
  readonly promotedBytes: number;
}

const GC_LINES = /^\[\d+:(0x[0-9a-f]+)\][ \t]+\d+ ms: pause=([\d.]+) [^\n]*?\bgc=(\w+)[^\n]*/gm;

/** Collects `--trace-gc-nvp` lines from a process's stdout while `recording` is on. */
export class GcTrace {
  recording = false;
  readonly events: GcEvent[] = [];
  /** The first isolate heard: the process's main thread (it collects while loading modules,
   * before any worker thread starts), so feed it the output from the start. */
  private mainIsolate: string | undefined;
  private partial = '';

  /**
   * Feed it the process's stdout. Most of it is the request log (a line per request): only
   * the lines that start with an isolate tag are looked at, and none once the main thread is
   * known and nothing is recorded, so the load generator pays little for listening.
   */
  hear = (chunk: string): void => {
    const text = this.partial + chunk;
    const complete = text.lastIndexOf('\n') + 1;
    this.partial = text.slice(complete);
    if (!this.recording && this.mainIsolate !== undefined) return;
    for (const match of text.slice(0, complete).matchAll(GC_LINES)) {
      this.mainIsolate ??= match[1]!;
      if (!this.recording) continue;
      this.events.push({
        isolate: match[1]!,
        scavenge: match[3] === 's',
        pauseMs: Number(match[2]),
        promotedBytes: Number(/\bpromoted=(\d+)/.exec(match[0])?.[1] ?? 0),
      });
    }
  };

  /** Bytes the main thread's scavenges promoted among the events recorded since `from`. */
  mainPromotedBytes(from = 0): number {
    let bytes = 0;
    for (const event of this.events.slice(from)) {
      if (event.scavenge && event.isolate === this.mainIsolate) bytes += event.promotedBytes;
    }
    return bytes;
  }

  /** Per isolate (the main thread and each worker thread): collections, pauses, promotion. */
  report(requests: number): string {
    const isolates = [...new Set(this.events.map((event) => event.isolate))];
    return isolates
      .map((isolate) => {
        const mine = this.events.filter((event) => event.isolate === isolate);
        const scavenges = mine.filter((event) => event.scavenge);
        const promoted = scavenges.reduce((sum, event) => sum + event.promotedBytes, 0);
        const pauses = scavenges.map((event) => event.pauseMs).sort((a, b) => a - b);
        const median = pauses[Math.floor(pauses.length / 2)] ?? 0;
        const role = isolate === this.mainIsolate ? 'main thread' : 'worker thread';
        return (
          `isolate ${isolate} (${role}): ${scavenges.length} scavenges (median pause ${median} ms), ` +
          `${mine.length - scavenges.length} other collections; promoted by scavenges ` +
          `${(promoted / requests / 1024).toFixed(2)} KB per request`
        );
      })
      .join('\n');
  }
}
