// CPU time of processes and of the whole machine, read from Linux's /proc: what a request
// costs each process taking part, which holds on a loaded machine where req/s does not.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

/** CPU time (user + system) a process has used so far, in µs (Linux /proc); 0 once gone. */
export function cpuMicros(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]);
    return (ticks * 1_000_000) / 100; // USER_HZ is 100 on Linux
  } catch {
    return 0;
  }
}

export function redisPid(): number | undefined {
  try {
    const info = execFileSync('redis-cli', ['info', 'server'], { encoding: 'utf8' });
    return Number(/process_id:(\d+)/.exec(info)?.[1]);
  } catch {
    return undefined; // no redis-cli here: the other processes are still reported
  }
}

/** Every Postgres process (the server and its backends). */
export function postgresPids(): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/comm`, 'utf8').startsWith('postgres');
      } catch {
        return false;
      }
    })
    .map(Number);
}

/** Busy and total jiffies of the whole machine (/proc/stat). */
export function machineTicks(): { busy: number; total: number } {
  const values = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1);
  const [user, nice, system, idle, iowait, irq, softirq, steal] = values.map(Number);
  const busy = user! + nice! + system! + irq! + softirq! + steal!;
  return { busy, total: busy + idle! + iowait! };
}
