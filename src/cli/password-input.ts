// Where the CLI reads a secret from — a dashboard user's password (`gw admin`), a vendor API
// key (`gw credentials add`): standard input (`--<flag>-stdin`: a pipe or a file, one line) or,
// at a terminal, a prompt that does not echo it. Never from the command line by choice:
// arguments are visible to every user of the machine (`ps`, /proc/<pid>/cmdline) and kept in
// shell history. create-user's `--password` and credentials add's `--secret` still work, with a
// warning on stderr (decisions 360, 369).
import { cliIo } from './io.js';
import { UsageError } from './output.js';

/** What is read, as the command's flags and messages name it. */
interface SecretKind {
  /** The flag: `password` (`--password`, `--password-stdin`). */
  readonly flag: string;
  /** In messages: `the password`. */
  readonly noun: string;
  /** The shell variable of the piping example: `$PASSWORD`. */
  readonly variable: string;
  /** The prompt at a terminal, without its colon: `Password`. */
  readonly prompt: string;
  /** Typed twice at a terminal (a new password); a key the vendor checks is typed once. */
  readonly typedTwice: boolean;
}

const PASSWORD: SecretKind = {
  flag: 'password',
  noun: 'the password',
  variable: '$PASSWORD',
  prompt: 'Password',
  typedTwice: true,
};

const VENDOR_KEY: SecretKind = {
  flag: 'secret',
  noun: 'the vendor API key',
  variable: '$VENDOR_API_KEY',
  prompt: 'Vendor API key',
  typedTwice: false,
};

const onCommandLineWarning = (kind: SecretKind): string =>
  `warning: --${kind.flag} is visible to other users of this machine in the process list and stays in your shell history; use --${kind.flag}-stdin (or type it at the prompt) instead\n`;

export const PASSWORD_ON_COMMAND_LINE_WARNING = onCommandLineWarning(PASSWORD);
export const SECRET_ON_COMMAND_LINE_WARNING = onCommandLineWarning(VENDOR_KEY);

export interface PasswordSource {
  /** `--password-stdin`: the password is the first line of standard input. */
  readonly fromStdin: boolean;
  /** `--password P` (create-user only, warned about). */
  readonly argument?: string | undefined;
}

/** The password `gw admin <command>` was given, from its one source. */
export function readPassword(command: string, source: PasswordSource): Promise<string> {
  return readSecret(PASSWORD, `gw admin ${command}`, source);
}

/** The vendor API key `gw credentials add` was given (`--secret-stdin`, a prompt, `--secret`). */
export function readVendorKey(source: PasswordSource): Promise<string> {
  return readSecret(VENDOR_KEY, 'gw credentials add', source);
}

async function readSecret(
  kind: SecretKind,
  command: string,
  source: PasswordSource,
): Promise<string> {
  const io = cliIo();
  const stdinFlag = `--${kind.flag}-stdin`;
  if (source.argument !== undefined && source.fromStdin) {
    throw new UsageError(`give ${kind.noun} once: --${kind.flag} or ${stdinFlag}, not both`);
  }
  if (source.argument !== undefined) {
    io.write('stderr', onCommandLineWarning(kind));
    return source.argument;
  }
  if (source.fromStdin && !io.inputIsTerminal) return oneLine(kind, await io.readInput());
  if (!io.inputIsTerminal) {
    throw new UsageError(
      `${command.replace(/^gw (admin )?/, '')} reads ${kind.noun} from standard input with ${stdinFlag} (e.g. printf '%s\\n' "${kind.variable}" | ${command} … ${stdinFlag}), or asks for it at a terminal`,
    );
  }
  const secret = await askCancellable(`${kind.prompt}: `);
  if (kind.typedTwice && (await askCancellable(`${kind.prompt} again: `)) !== secret) {
    throw new UsageError(`the two ${kind.flag}s typed differ; nothing was changed`);
  }
  return secret;
}

/** Standard input as one secret: its first line, which must be all there is. */
function oneLine(kind: SecretKind, input: string): string {
  const line = input.replace(/\r?\n$/, '');
  const stdinFlag = `--${kind.flag}-stdin`;
  if (/[\r\n]/.test(line)) {
    throw new UsageError(`${stdinFlag}: standard input must hold ${kind.noun} on one line`);
  }
  if (line === '') throw new UsageError(`${stdinFlag}: standard input is empty`);
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
