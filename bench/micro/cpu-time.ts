// The CPU a piece of work costs this process, as the micro-benchmarks measure it.

/** Median CPU (ms, user + system) of `rounds` runs of `work` after one warm-up run. */
export function cpuMs(work: () => unknown, rounds = 5): number {
  work(); // warm
  const samples: number[] = [];
  for (let round = 0; round < rounds; round += 1) {
    const start = process.cpuUsage();
    work();
    const used = process.cpuUsage(start);
    samples.push((used.user + used.system) / 1000);
  }
  samples.sort((a, b) => a - b);
  return samples[Math.floor(samples.length / 2)]!;
}
