// node scripts/token-table.mjs: writes src/tokens/o200k_base.bin, the o200k_base BPE table the
// gateway counts tokens with (src/tokens/bpe.ts), from the ranks gpt-tokenizer ships (a
// development dependency: the gateway itself never loads its 60 MB of tables).
//
// Format: every token in rank order (0 … 199,997), each as one byte of length (1–128) and its
// bytes. src/tokens/bpe.test.ts checks that the committed file is what this script writes.
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** The table's bytes, from gpt-tokenizer's rank list (strings are UTF-8, the rest byte lists). */
export async function o200kTableBytes() {
  const { default: ranks } = await import('gpt-tokenizer/bpeRanks/o200k_base');
  const chunks = [];
  for (let rank = 0; rank < ranks.length; rank += 1) {
    const token = ranks[rank];
    if (token === undefined) throw new Error(`rank ${rank} has no token`);
    const bytes = typeof token === 'string' ? Buffer.from(token, 'utf8') : Buffer.from(token);
    if (bytes.length < 1 || bytes.length > 255)
      throw new Error(`rank ${rank}: ${bytes.length} bytes`);
    chunks.push(Buffer.from([bytes.length]), bytes);
  }
  return Buffer.concat(chunks);
}

export const TABLE_FILE = fileURLToPath(new URL('../src/tokens/o200k_base.bin', import.meta.url));

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const bytes = await o200kTableBytes();
  writeFileSync(TABLE_FILE, bytes);
  console.log(`${TABLE_FILE}: ${bytes.length} bytes`);
}
