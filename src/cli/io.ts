// Where a CLI run reads its environment and input and writes its output. `gw` itself uses the
// process's; tests run commands in-process with their own (no node start-up, no module loading
// per call), concurrently, each with its own streams, through an AsyncLocalStorage.
import { AsyncLocalStorage } from 'node:async_hooks';
import { createInterface } from 'node:readline/promises';
import { Writable } from 'node:stream';

export interface CliIo {
  readonly env: NodeJS.ProcessEnv;
  write(stream: 'stdout' | 'stderr', text: string): void;
  /** Standard input is a terminal (someone can be asked), not a pipe or a file. */
  readonly inputIsTerminal: boolean;
  /** All of standard input (a pipe or a file), as text. */
  readInput(): Promise<string>;
  /** Asks at the terminal, on stderr, without echoing the answer (a password). */
  askSecret(prompt: string): Promise<string>;
}

const processIo: CliIo = {
  get env() {
    return process.env;
  },
  write: (stream, text) => void process[stream].write(text),
  get inputIsTerminal() {
    return process.stdin.isTTY === true;
  },
  async readInput() {
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString('utf8');
  },
  askSecret: askWithoutEcho,
};

/** Reads one line from the terminal with its echo swallowed; Ctrl-C cancels it. */
async function askWithoutEcho(prompt: string): Promise<string> {
  process.stderr.write(prompt);
  const silent = new Writable({ write: (_chunk, _encoding, done) => done() });
  const terminal = createInterface({ input: process.stdin, output: silent, terminal: true });
  const cancel = new AbortController();
  terminal.on('SIGINT', () => cancel.abort());
  try {
    return await terminal.question('', { signal: cancel.signal });
  } finally {
    terminal.close();
    process.stderr.write('\n');
  }
}

const storage = new AsyncLocalStorage<CliIo>();

/** The I/O of the command running now. */
export function cliIo(): CliIo {
  return storage.getStore() ?? processIo;
}

/** Runs `work` with `io` as the I/O of every CLI call inside it. */
export function withCliIo<T>(io: CliIo, work: () => Promise<T>): Promise<T> {
  return storage.run(io, work);
}
