// Where `gw admin` reads a password from: standard input (`--password-stdin`: a pipe or a file,
// one line) or, at a terminal, a prompt that does not echo it, typed twice. Never from the
// command line by choice: arguments are visible to every user of the machine (`ps`,
// /proc/<pid>/cmdline) and kept in shell history. create-user's `--password` still works, with
// a warning on stderr (decision 360).
import { cliIo } from './io.js';
import { UsageError } from './output.js';

export const PASSWORD_ON_COMMAND_LINE_WARNING =
  'warning: --password is visible to other users of this machine in the process list and stays in your shell history; use --password-stdin (or type it at the prompt) instead\n';

export interface PasswordSource {
  /** `--password-stdin`: the password is the first line of standard input. */
  readonly fromStdin: boolean;
  /** `--password P` (create-user only, warned about). */
  readonly argument?: string | undefined;
}

/** The password the command was given, from its one source. */
export async function readPassword(command: string, source: PasswordSource): Promise<string> {
  const io = cliIo();
  if (source.argument !== undefined && source.fromStdin) {
    throw new UsageError('give the password once: --password or --password-stdin, not both');
  }
  if (source.argument !== undefined) {
    io.write('stderr', PASSWORD_ON_COMMAND_LINE_WARNING);
    return source.argument;
  }
  if (source.fromStdin && !io.inputIsTerminal) return oneLine(await io.readInput());
  if (!io.inputIsTerminal) {
    throw new UsageError(
      `${command} reads the password from standard input with --password-stdin (e.g. printf '%s\\n' "$PASSWORD" | gw admin ${command} … --password-stdin), or asks for it at a terminal`,
    );
  }
  const password = await askCancellable('Password: ');
  if ((await askCancellable('Password again: ')) !== password) {
    throw new UsageError('the two passwords typed differ; nothing was changed');
  }
  return password;
}

/** Standard input as one password: its first line, which must be all there is. */
function oneLine(input: string): string {
  const line = input.replace(/\r?\n$/, '');
  if (/[\r\n]/.test(line)) {
    throw new UsageError('--password-stdin: standard input must hold the password on one line');
  }
  if (line === '') throw new UsageError('--password-stdin: standard input is empty');
  return line;
}

async function askCancellable(prompt: string): Promise<string> {
  try {
    return await cliIo().askSecret(prompt);
  } catch (error) {
    if ((error as Error).name === 'AbortError') throw new UsageError('cancelled; nothing changed');
    throw error;
  }
}
