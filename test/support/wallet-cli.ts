// `gw wallet …` run in the test's process on a money layer of the test's own (one whose
// Redis steps a test cuts off): what it printed, or the error it ended with.
import type { WalletService } from '../../src/billing/wallets.js';
import type { CliContext } from '../../src/cli/context.js';
import { withCliIo, type CliIo } from '../../src/cli/io.js';
import { UsageError } from '../../src/cli/output.js';
import { walletCommand } from '../../src/cli/wallet.js';
import type { DbPool } from '../../src/db/pool.js';

export async function gwWallet(
  db: DbPool,
  walletService: WalletService,
  argv: string[],
): Promise<string> {
  return (await gwWalletOutput(db, walletService, argv)).stdout;
}

/** The same, with what it wrote on stderr too (a note beside its answer). */
export async function gwWalletOutput(
  db: DbPool,
  walletService: WalletService,
  argv: string[],
): Promise<{ stdout: string; stderr: string }> {
  const written = { stdout: '', stderr: '' };
  const io: CliIo = {
    env: {},
    write: (stream, text) => void (written[stream] += text),
    inputIsTerminal: false,
    readInput: () => Promise.resolve(''),
    askSecret: () => Promise.reject(new Error('no terminal')),
  };
  const context = { db, wallets: walletService } as unknown as CliContext;
  await withCliIo(io, () => walletCommand(context, argv));
  return written;
}

/** The error `gw wallet …` ended with (a UsageError: its code and message); fails if it printed. */
export async function gwWalletError(
  db: DbPool,
  walletService: WalletService,
  argv: string[],
): Promise<UsageError> {
  const failed = await gwWallet(db, walletService, argv).then(
    () => undefined,
    (error: unknown) => error,
  );
  if (!(failed instanceof UsageError)) {
    throw new Error(`gw wallet ${argv.join(' ')} ended with ${String(failed)}, not a UsageError`);
  }
  return failed;
}
