// `gw wallet …` run in the test's process on a money layer of the test's own (one whose
// Redis steps a test cuts off): what it printed, or the error it ended with.
import { createMoneyLayer, type MoneyLayerParts } from '../../src/billing/compose.js';
import type { WalletService } from '../../src/billing/wallets.js';
import type { CliContext } from '../../src/cli/context.js';
import { withCliIo, type CliIo } from '../../src/cli/io.js';
import { UsageError } from '../../src/cli/output.js';
import { walletCommand } from '../../src/cli/wallet.js';
import type { DbPool } from '../../src/db/pool.js';
import type { RedisScripts } from '../../src/redis/scripts.js';

/**
 * The wallets of a money layer of the test's own, over `parts`, with any of its scripts
 * replaced by `overrides` (one defined on a Redis that is gone: an instance that loses Redis
 * at that step).
 */
export function testWallets(
  parts: Pick<MoneyLayerParts, 'db' | 'redis' | 'keys' | 'scripts'>,
  overrides: Partial<RedisScripts> = {},
): WalletService {
  return createMoneyLayer({
    ...parts,
    scripts: { ...parts.scripts, ...overrides },
    reservationTtlMs: 60_000,
  }).wallets;
}

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
