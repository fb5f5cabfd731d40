// `gw wallet …` run in the test's process on a money layer of the test's own (one whose
// Redis steps a test cuts off): what it printed, or the error it ended with.
import type { WalletService } from '../../src/billing/wallets.js';
import type { CliContext } from '../../src/cli/context.js';
import { withCliIo, type CliIo } from '../../src/cli/io.js';
import { walletCommand } from '../../src/cli/wallet.js';
import type { DbPool } from '../../src/db/pool.js';

export async function gwWallet(
  db: DbPool,
  walletService: WalletService,
  argv: string[],
): Promise<string> {
  let stdout = '';
  const io: CliIo = {
    env: {},
    write: (stream, text) => void (stream === 'stdout' ? (stdout += text) : undefined),
    inputIsTerminal: false,
    readInput: () => Promise.resolve(''),
    askSecret: () => Promise.reject(new Error('no terminal')),
  };
  const context = { db, wallets: walletService } as unknown as CliContext;
  await withCliIo(io, () => walletCommand(context, argv));
  return stdout;
}
