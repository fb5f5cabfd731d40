// Where a CLI run reads its environment and writes its output. `gw` itself uses the process's;
// tests run commands in-process with their own (no node start-up, no module loading per call),
// concurrently, each with its own streams, through an AsyncLocalStorage.
import { AsyncLocalStorage } from 'node:async_hooks';

export interface CliIo {
  readonly env: NodeJS.ProcessEnv;
  write(stream: 'stdout' | 'stderr', text: string): void;
}

const processIo: CliIo = {
  get env() {
    return process.env;
  },
  write: (stream, text) => void process[stream].write(text),
};

const storage = new AsyncLocalStorage<CliIo>();

/** The I/O of the command running now. */
export function cliIo(): CliIo {
  return storage.getStore() ?? processIo;
}

/** Runs `work` with `io` as the I/O of every CLI call inside it. */
export function withCliIo<T>(io: CliIo, work: () => Promise<T>): Promise<T> {
  return storage.run(io, work);
}
