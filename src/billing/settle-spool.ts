// The settle spool: settles that failed after the vendor answered (Redis unreachable) are
// appended to a local file and fsynced before the request is answered, then replayed once
// Redis is back: at start, whenever Redis reconnects, and every few seconds while entries
// wait. Replay settles each request idempotently (skipping requests that already have a
// record anywhere), so accounts are charged, holds released and the record reaches the
// usage stream and Postgres exactly once; then the entry is retired.
//
// Until then the request's holds are kept from lapsing, as while it ran (decision 564): the
// cost the entry will charge stays held, so no request is admitted on that money while the
// replay waits (Redis back, Postgres not yet; the replay timer). This instance renews the holds
// of the entries it appended and of those it took over from a gone instance (decision 579), until
// each is retired, refused by Redis, or the spool stops. Renewals fail while Redis is out of
// reach and are sent again the moment it is back (decision 581); a hold whose lapse passed
// during the outage is still swept by a reserve that runs before that, on another instance.
//
// Files: `<namespace>~<host>~<pid>~<instance>~<seq>.spool` in SPOOL_DIR, one line of JSON per
// entry. Only its owner appends to a file. An instance's files are taken over (renamed to the
// taker's name) by another instance of the same namespace once the owner is gone: at once on
// the same host when its process no longer runs, or when no heartbeat touched them for
// `staleAfterMs` (other hosts sharing the directory). A line that does not parse (the torn
// last line of a crash) is skipped; the rest replays.
import { randomBytes } from 'node:crypto';
import { mkdir, open, readdir, readFile, rename, stat, unlink, utimes } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { hostname } from 'node:os';
import path from 'node:path';
import type { BudgetStore, RequestAccounts } from './budget-store.js';
import type { Logger } from '../log.js';
import type { RecordedUsage } from '../ledger/recorded-usage.js';
import { readSpoolLine, spoolLine, type SpoolLine, type SpooledSettle } from './spool-entry.js';
import type { UsageRecord } from '../ledger/usage-record.js';

export interface SettleSpoolOptions {
  readonly dir: string;
  /** Instances share spooled work only within one namespace (the Redis key prefix). */
  readonly namespace: string;
  readonly replayIntervalMs?: number;
  readonly staleAfterMs?: number;
}

export interface SettleSpoolDeps {
  readonly budget: BudgetStore;
  readonly recorded: Pick<RecordedUsage, 'among'>;
  /** False while Redis is unreachable: replay waits instead of failing entry by entry. */
  readonly redisReady: () => boolean;
  readonly logger: Logger;
  readonly counters: {
    readonly settleSpooled: { inc(): void };
    readonly settleSpoolReplayed: { inc(count: number): void };
    readonly settleSpoolPending: { set(count: number): void };
  };
}

const REPLAY_INTERVAL_MS = 5_000;
const STALE_AFTER_MS = 60_000;
const SUFFIX = '.spool';

interface SpoolFileName {
  readonly namespace: string;
  readonly host: string;
  readonly pid: number;
  readonly instance: string;
  readonly seq: number;
}

/** Spools open in this process (tests run several gateways in one process). */
const liveInstances = new Set<string>();

const sanitize = (text: string): string => text.replace(/[^A-Za-z0-9_.-]/g, '_');

function parseName(name: string): SpoolFileName | undefined {
  if (!name.endsWith(SUFFIX)) return undefined;
  const parts = name.slice(0, -SUFFIX.length).split('~');
  if (parts.length !== 5) return undefined;
  const [namespace, host, pid, instance, seq] = parts as [string, string, string, string, string];
  if (!/^\d+$/.test(pid) || !/^\d+$/.test(seq)) return undefined;
  return { namespace, host, pid: Number(pid), instance, seq: Number(seq) };
}

function processRuns(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** A settle Redis refused (a script error): retrying it now would fail the same way. */
const isRefusal = (error: unknown): boolean => (error as Error | null)?.name === 'ReplyError';

export class SettleSpool {
  private readonly host = sanitize(hostname());
  private readonly namespace: string;
  private readonly instance = randomBytes(4).toString('hex');
  private seq = 0;
  private active: FileHandle | undefined;
  /** Entries appended to the active file since it was opened. */
  private activeEntries = 0;
  /** Entries left in rotated and taken-over files after the last replay. */
  private waitingEntries = 0;
  /** Appends and rotations of the active file, one at a time. */
  private fileLock: Promise<unknown> = Promise.resolve();
  private replaying: Promise<void> | undefined;
  /** The entries held here and not retired yet: request id → stops renewing its holds. */
  private readonly keepingHeld = new Map<string, () => void>();
  /** Entries Redis refused to settle: left to lapse until someone looks (not renewed again). */
  private readonly refused = new Set<string>();
  private replayAgain = false;
  private timer: NodeJS.Timeout | undefined;
  private readonly replayIntervalMs: number;
  private readonly staleAfterMs: number;

  constructor(
    private readonly options: SettleSpoolOptions,
    private readonly deps: SettleSpoolDeps,
  ) {
    this.namespace = sanitize(options.namespace);
    this.replayIntervalMs = options.replayIntervalMs ?? REPLAY_INTERVAL_MS;
    this.staleAfterMs = options.staleAfterMs ?? STALE_AFTER_MS;
  }

  /** Creates the directory and proves it takes an fsynced write: boot fails if it does not. */
  async open(): Promise<void> {
    await mkdir(this.options.dir, { recursive: true });
    const probe = path.join(this.options.dir, `.probe-${this.instance}`);
    const handle = await open(probe, 'w');
    try {
      await handle.writeFile('ok');
      await handle.sync();
    } finally {
      await handle.close();
    }
    await unlink(probe);
    liveInstances.add(this.instance);
  }

  /** Replays now, then on a timer (which also keeps this instance's files fresh). */
  start(): void {
    this.timer = setInterval(() => {
      void this.touchOwnFiles().then(() => this.replay());
    }, this.replayIntervalMs);
    this.timer.unref();
    void this.replay();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    for (const requestId of [...this.keepingHeld.keys()]) this.stopKeepingHeld(requestId);
    await this.replaying;
    await this.withFileLock(() => this.closeActive());
    liveInstances.delete(this.instance);
  }

  /** Appends one settle and fsyncs it: when this resolves, the entry survives a crash. */
  async append(record: UsageRecord, accounts: RequestAccounts): Promise<void> {
    const line = `${spoolLine({ record, accounts })}\n`;
    await this.withFileLock(async () => {
      try {
        if (!this.active) {
          this.active = await open(this.ownPath(this.seq), 'a');
          this.activeEntries = 0;
        }
        await this.active.write(line);
        await this.active.sync();
      } catch (error) {
        // The file may now end in a torn line: later entries go to a fresh file.
        await this.closeActive().catch(() => undefined);
        throw error;
      }
      this.activeEntries += 1;
    });
    this.keepHeld({ record, accounts });
    this.deps.counters.settleSpooled.inc();
    this.reportPending();
  }

  /** Replays every spooled settle this instance owns or can take over. Never throws. */
  replay(): Promise<void> {
    if (this.replaying) {
      this.replayAgain = true;
      return this.replaying;
    }
    this.replaying = (async () => {
      do {
        this.replayAgain = false;
        try {
          await this.replayOnce();
        } catch (error) {
          this.deps.logger.error({ err: error }, 'settle spool: replay failed; retrying later');
        }
      } while (this.replayAgain && this.deps.redisReady());
    })().finally(() => (this.replaying = undefined));
    return this.replaying;
  }

  private async replayOnce(): Promise<void> {
    if (!this.deps.redisReady()) return;
    // New appends go to a fresh file while this one replays.
    await this.withFileLock(() => this.closeActive());
    await this.takeOverOrphans();
    let waiting = 0;
    let redisGone = false;
    for (const file of await this.ownFiles()) {
      if (redisGone) {
        const lines = await this.readEntries(file);
        this.keepHeldWhileWaiting(lines);
        waiting += lines.length;
        continue;
      }
      const result = await this.replayFile(file);
      waiting += result.left;
      redisGone = result.redisGone;
    }
    this.waitingEntries = waiting;
    this.reportPending();
  }

  /**
   * Replays one file's entries; rewrites it with the lines left (as they were written), or
   * deletes it. Lines a newer version wrote are left for one.
   */
  private async replayFile(file: string): Promise<{ left: number; redisGone: boolean }> {
    const lines = await this.readEntries(file);
    // Entries taken over from a gone instance are renewed from now on, as this instance's own
    // are (decision 579): the replay below may leave them waiting.
    this.keepHeldWhileWaiting(lines);
    const left: string[] = [];
    let redisGone = false;
    let retired = 0;
    const byOrg = new Map<string, Array<{ entry: SpooledSettle; line: string }>>();
    const newer: string[] = [];
    for (const read of lines) {
      if (read.kind === 'newer') {
        left.push(read.line);
        newer.push(...read.unknown);
        continue;
      }
      const orgEntries = byOrg.get(read.entry.record.orgId) ?? [];
      orgEntries.push(read);
      byOrg.set(read.entry.record.orgId, orgEntries);
    }
    if (newer.length > 0) {
      this.deps.logger.warn(
        { file: path.basename(file), unknown: [...new Set(newer)].slice(0, 20) },
        'settle spool: entries a newer version spooled wait for one (not replayed)',
      );
    }
    for (const [orgId, orgEntries] of byOrg) {
      if (redisGone) {
        left.push(...orgEntries.map(({ line }) => line));
        continue;
      }
      let recorded: Set<string>;
      try {
        recorded = await this.deps.recorded.among(
          orgId,
          orgEntries.map(({ entry }) => entry.record.requestId),
        );
      } catch (error) {
        this.deps.logger.warn({ err: error }, 'settle spool: cannot check records yet');
        left.push(...orgEntries.map(({ line }) => line));
        redisGone = true;
        continue;
      }
      for (const { entry, line } of orgEntries) {
        if (redisGone) {
          left.push(line);
          continue;
        }
        if (!recorded.has(entry.record.requestId)) {
          try {
            await this.deps.budget.settle(entry.record, entry.accounts);
          } catch (error) {
            left.push(line);
            if (isRefusal(error)) {
              // It will not settle until someone looks: its holds lapse as before.
              this.stopKeepingHeld(entry.record.requestId);
              this.refused.add(entry.record.requestId);
              this.deps.logger.error(
                { err: error, requestId: entry.record.requestId },
                'settle spool: Redis refused a spooled settle; kept in the spool',
              );
            } else {
              redisGone = true;
            }
            continue;
          }
        }
        retired += 1;
        this.stopKeepingHeld(entry.record.requestId);
        this.refused.delete(entry.record.requestId);
        recorded.add(entry.record.requestId); // a duplicate line settles once
      }
    }
    if (retired > 0) {
      this.deps.counters.settleSpoolReplayed.inc(retired);
      this.deps.logger.info({ retired, left: left.length }, 'settle spool: replayed');
    }
    if (left.length === 0) {
      await unlink(file);
    } else if (left.length < lines.length) {
      await this.rewrite(file, left);
    }
    return { left: left.length, redisGone };
  }

  /** The file's lines; those that are not entries (a torn last line) are skipped, loudly. */
  private async readEntries(file: string): Promise<SpoolLine[]> {
    const entries: SpoolLine[] = [];
    const text = await readFile(file, 'utf8');
    let skipped = 0;
    for (const line of text.split('\n')) {
      if (line.trim() === '') continue;
      try {
        entries.push(readSpoolLine(line));
      } catch {
        skipped += 1;
      }
    }
    if (skipped > 0) {
      this.deps.logger.error(
        { file: path.basename(file), skipped },
        'settle spool: skipped lines that are not entries (torn by a crash?)',
      );
    }
    return entries;
  }

  /** Writes `lines` (as read: nothing re-encoded) in place of the file, fsynced. */
  private async rewrite(file: string, lines: readonly string[]): Promise<void> {
    const temporary = `${file}.tmp`;
    const handle = await open(temporary, 'w');
    try {
      await handle.writeFile(lines.map((line) => `${line}\n`).join(''));
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temporary, file);
  }

  /** This instance's files, except the one appends go to now. */
  private async ownFiles(): Promise<string[]> {
    const names = await readdir(this.options.dir);
    const own: Array<{ name: string; seq: number }> = [];
    for (const name of names) {
      const parsed = parseName(name);
      if (!parsed || !this.isOwn(parsed)) continue;
      if (this.active && parsed.seq === this.seq) continue;
      own.push({ name, seq: parsed.seq });
    }
    return own.sort((a, b) => a.seq - b.seq).map(({ name }) => path.join(this.options.dir, name));
  }

  /**
   * Renews the entry's holds until it is retired, unless they are renewed already or Redis
   * refused its settle. `atOnce`: renewed now as well (an entry taken over may have gone
   * unrenewed since its instance died), not only a third of the lapse from now.
   */
  private keepHeld({ record, accounts }: SpooledSettle, atOnce = false): void {
    if (this.keepingHeld.has(record.requestId) || this.refused.has(record.requestId)) return;
    this.keepingHeld.set(
      record.requestId,
      this.deps.budget.keepHeld(
        { requestId: record.requestId, accounts, amountNano: record.reservedNano },
        { renewAtOnce: atOnce },
      ),
    );
  }

  /** Entries read from this instance's files: those taken over are renewed from now on. */
  private keepHeldWhileWaiting(lines: readonly SpoolLine[]): void {
    for (const read of lines) if (read.kind === 'entry') this.keepHeld(read.entry, true);
  }

  private stopKeepingHeld(requestId: string): void {
    this.keepingHeld.get(requestId)?.();
    this.keepingHeld.delete(requestId);
  }

  /** Renames the files of gone instances of this namespace to this instance's names. */
  private async takeOverOrphans(): Promise<void> {
    const now = Date.now();
    for (const name of await readdir(this.options.dir)) {
      const parsed = parseName(name);
      if (!parsed || parsed.namespace !== this.namespace || this.isOwn(parsed)) continue;
      const from = path.join(this.options.dir, name);
      const sameHost = parsed.host === this.host;
      // Our own pid on another instance's file: a previous life of this process (a container
      // restarted with pid 1), unless that spool is open in this process too.
      let gone =
        sameHost &&
        (parsed.pid === process.pid
          ? !liveInstances.has(parsed.instance)
          : !processRuns(parsed.pid));
      if (!gone) {
        const info = await stat(from).catch(() => undefined);
        gone = info !== undefined && now - info.mtimeMs > this.staleAfterMs;
      }
      if (!gone) continue;
      const seq = await this.withFileLock(async () => {
        // Past the active file's number: appends never reach a taken-over file.
        if (this.active) await this.closeActive();
        this.seq += 1;
        return this.seq - 1;
      });
      try {
        await rename(from, this.ownPath(seq)); // atomic: one taker wins
        this.deps.logger.warn({ file: name }, 'settle spool: took over a gone instance’s file');
      } catch {
        // another instance took it first
      }
    }
  }

  /** Heartbeat: other hosts sharing the directory leave files touched lately alone. */
  private async touchOwnFiles(): Promise<void> {
    const now = new Date();
    const names = await readdir(this.options.dir).catch(() => []);
    for (const name of names) {
      const parsed = parseName(name);
      if (parsed && this.isOwn(parsed)) {
        await utimes(path.join(this.options.dir, name), now, now).catch(() => undefined);
      }
    }
  }

  private isOwn(name: SpoolFileName): boolean {
    return (
      name.namespace === this.namespace &&
      name.host === this.host &&
      name.pid === process.pid &&
      name.instance === this.instance
    );
  }

  private ownPath(seq: number): string {
    const name = [this.namespace, this.host, process.pid, this.instance, seq].join('~');
    return path.join(this.options.dir, `${name}${SUFFIX}`);
  }

  /** Closes the active file; the next append opens a new one. Call under the file lock. */
  private async closeActive(): Promise<void> {
    const active = this.active;
    if (!active) return;
    this.active = undefined;
    this.seq += 1;
    this.waitingEntries += this.activeEntries;
    this.activeEntries = 0;
    await active.close();
  }

  private withFileLock<T>(work: () => Promise<T>): Promise<T> {
    const run = this.fileLock.then(work, work);
    this.fileLock = run.catch(() => undefined);
    return run;
  }

  private reportPending(): void {
    this.deps.counters.settleSpoolPending.set(this.waitingEntries + this.activeEntries);
  }
}
