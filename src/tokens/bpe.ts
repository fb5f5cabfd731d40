// o200k_base byte-pair encoding, counting only, over a compact table (decision 295).
// gpt-tokenizer held the same 200,000 tokens as ~400,000 JavaScript strings and Map entries:
// ~60 MB of RSS in every thread that counts (the event loop and each counting thread). Here
// they are one 1.6 MB file read into a Buffer, an offsets array and an open-addressing hash
// table: ~4.5 MB, off the JavaScript heap. The counts are the same as gpt-tokenizer's
// (bpe.test.ts compares them over a corpus), with two exceptions: text that looks like a
// special token (`<|endoftext|>`) is counted as the text it is (a vendor does not let a
// user's message close the conversation, and gpt-tokenizer threw on it), and U+FEFF is the one
// token tiktoken makes of it (gpt-tokenizer keeps that token's bytes where its lookup by text
// never finds them, and counts two).
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * o200k's pre-tokenization (tiktoken's pattern): words with their leading punctuation or
 * space, contractions, runs of up to three digits, punctuation runs, newlines, spaces.
 */
const O200K_SPLIT = new RegExp(
  [
    String.raw`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?:'(?:[sS]|[dD]|[mM]|[tT]|[lL][lL]|[vV][eE]|[rR][eE]))?`,
    String.raw`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?:'(?:[sS]|[dD]|[mM]|[tT]|[lL][lL]|[vV][eE]|[rR][eE]))?`,
    String.raw`\p{N}{1,3}`,
    String.raw` ?[^\s\p{L}\p{N}]+[\r\n/]*`,
    String.raw`\s*[\r\n]+`,
    String.raw`\s+(?!\S)`,
    String.raw`\s+`,
  ].join('|'),
  'gu',
);

/** No rank: a byte sequence that is not a token. */
const NONE = 0x7fffffff;

/** The table file beside this module (src/tokens, and dist/src/tokens after the build). */
export const O200K_TABLE_FILE = fileURLToPath(new URL('./o200k_base.bin', import.meta.url));

function fnv1a(bytes: Uint8Array, start: number, end: number): number {
  let hash = 0x811c9dc5;
  for (let index = start; index < end; index += 1) {
    hash ^= bytes[index]!;
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

/** Every token's bytes and a hash table from bytes to rank. */
export class BpeTable {
  /** Token bytes, back to back in rank order. */
  private readonly bytes: Uint8Array;
  /** Where token `rank` starts in `bytes` (and, at rank + 1, where it ends). */
  private readonly offsets: Uint32Array;
  /** rank + 1 at the token's hash slot (linear probing), 0 where empty. */
  private readonly slots: Int32Array;
  private readonly mask: number;

  /** `file`: one length byte then the token's bytes, for every rank in order. */
  constructor(file: Uint8Array) {
    let count = 0;
    for (let at = 0; at < file.length; at += 1 + file[at]!) count += 1;
    this.offsets = new Uint32Array(count + 1);
    this.bytes = new Uint8Array(file.length - count);
    let written = 0;
    let at = 0;
    for (let rank = 0; rank < count; rank += 1) {
      const length = file[at]!;
      this.offsets[rank] = written;
      this.bytes.set(file.subarray(at + 1, at + 1 + length), written);
      written += length;
      at += 1 + length;
    }
    this.offsets[count] = written;
    let size = 1;
    while (size < count * 2) size *= 2;
    this.slots = new Int32Array(size);
    this.mask = size - 1;
    for (let rank = 0; rank < count; rank += 1) {
      let slot = fnv1a(this.bytes, this.offsets[rank]!, this.offsets[rank + 1]!) & this.mask;
      while (this.slots[slot] !== 0) slot = (slot + 1) & this.mask;
      this.slots[slot] = rank + 1;
    }
  }

  static load(path: string = O200K_TABLE_FILE): BpeTable {
    return new BpeTable(readFileSync(path));
  }

  get size(): number {
    return this.offsets.length - 1;
  }

  /** The rank of `piece[start, end)` as one token, or NONE. */
  rank(piece: Uint8Array, start: number, end: number): number {
    const length = end - start;
    let slot = fnv1a(piece, start, end) & this.mask;
    for (;;) {
      const entry = this.slots[slot]!;
      if (entry === 0) return NONE;
      const tokenStart = this.offsets[entry - 1]!;
      if (this.offsets[entry]! - tokenStart === length) {
        let same = true;
        for (let index = 0; index < length; index += 1) {
          if (this.bytes[tokenStart + index] !== piece[start + index]) {
            same = false;
            break;
          }
        }
        if (same) return entry - 1;
      }
      slot = (slot + 1) & this.mask;
    }
  }
}

/** Counts tokens with one table; scratch arrays grow to the longest piece seen. */
export class BpeCounter {
  private scratch = Buffer.allocUnsafe(1024);
  private starts = new Int32Array(1024);
  private ranks = new Int32Array(1024);

  constructor(private readonly table: BpeTable) {}

  /** The o200k_base token count of `text`. */
  count(text: string): number {
    let tokens = 0;
    O200K_SPLIT.lastIndex = 0;
    for (let match = O200K_SPLIT.exec(text); match !== null; match = O200K_SPLIT.exec(text)) {
      const piece = match[0];
      // Every single byte is a token: one ASCII character is one.
      if (piece.length === 1 && piece.charCodeAt(0) < 0x80) tokens += 1;
      else tokens += this.countPiece(piece);
    }
    return tokens;
  }

  private countPiece(piece: string): number {
    if (this.scratch.length < piece.length * 3) {
      this.scratch = Buffer.allocUnsafe(piece.length * 3);
    }
    const length = this.utf8(piece);
    if (length === 1 || this.table.rank(this.scratch, 0, length) !== NONE) return 1;
    return this.merge(length);
  }

  /** Writes `piece` into `scratch` as UTF-8; returns its length in bytes. */
  private utf8(piece: string): number {
    // Most pieces are ASCII words: copied here, they need no call into Buffer's encoder.
    for (let index = 0; index < piece.length; index += 1) {
      const code = piece.charCodeAt(index);
      if (code >= 0x80) {
        // Lone surrogates become U+FFFD's three bytes, as TextEncoder writes them.
        return this.scratch.write(piece, 0, 'utf8');
      }
      this.scratch[index] = code;
    }
    return piece.length;
  }

  /**
   * tiktoken's byte-pair merge of `scratch[0, length)`: merge the adjacent pair whose
   * concatenation has the lowest rank (the leftmost on a tie) until no pair is a token; the
   * parts left are the tokens.
   */
  private merge(length: number): number {
    if (this.starts.length < length + 1) {
      this.starts = new Int32Array(length + 1);
      this.ranks = new Int32Array(length + 1);
    }
    const { starts, ranks, scratch, table } = this;
    let parts = length; // boundaries: parts + 1
    for (let index = 0; index <= length; index += 1) starts[index] = index;
    for (let index = 0; index < length - 1; index += 1) {
      ranks[index] = table.rank(scratch, index, index + 2);
    }
    ranks[length - 1] = NONE;
    const pairRank = (index: number): number =>
      index + 2 <= parts ? table.rank(scratch, starts[index]!, starts[index + 2]!) : NONE;
    while (parts > 1) {
      let lowest = NONE;
      let at = -1;
      for (let index = 0; index < parts - 1; index += 1) {
        if (ranks[index]! < lowest) {
          lowest = ranks[index]!;
          at = index;
        }
      }
      if (at === -1) break;
      // Drop the boundary between the pair, and the pair's rank.
      starts.copyWithin(at + 1, at + 2, parts + 1);
      ranks.copyWithin(at, at + 1, parts);
      parts -= 1;
      ranks[at] = pairRank(at);
      if (at > 0) ranks[at - 1] = pairRank(at - 1);
    }
    return parts;
  }
}
