// The dead-letter table of the usage writer: stream entries that can never become a
// usage_records row (Postgres refuses the row, or the entry is not a record), each with the
// reason, the entry itself and the time. Writing one twice keeps one (stream, entry id).
import type { DbPool } from '../db/pool.js';

export interface DeadLetter {
  readonly stream: string;
  readonly entryId: string;
  readonly fields: readonly string[];
  readonly reason: string;
  /** From the entry when it could be read. */
  readonly requestId: string | null;
  readonly orgId: string | null;
}

/** Postgres text refuses NUL; everything else a JS string holds is stored as UTF-8. */
const storable = (text: string): string => text.replaceAll('\0', '\uFFFD');

export class UsageDeadLetters {
  constructor(private readonly db: DbPool) {}

  async write(letters: readonly DeadLetter[]): Promise<void> {
    if (letters.length === 0) return;
    const column = (pick: (letter: DeadLetter) => string | null): Array<string | null> =>
      letters.map((letter) => {
        const value = pick(letter);
        return value === null ? null : storable(value);
      });
    await this.db.query(
      `INSERT INTO usage_dead_letters (stream, entry_id, request_id, org_id, reason, entry)
       SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[])
       ON CONFLICT (stream, entry_id) DO NOTHING`,
      [
        column((letter) => letter.stream),
        column((letter) => letter.entryId),
        column((letter) => letter.requestId),
        column((letter) => letter.orgId),
        column((letter) => letter.reason.slice(0, 2000)),
        // JSON escapes NUL and lone surrogates: the entry is kept byte for byte.
        column((letter) => JSON.stringify(letter.fields)),
      ],
    );
  }
}

/**
 * True when a batch write failed because of what a row holds (Postgres data exception,
 * class 22, or constraint violation, class 23; or a value JS cannot turn into a parameter):
 * retrying the same rows can never succeed. Anything else (connection lost, Postgres down,
 * a missing table) is retried as it is, never dead-lettered.
 */
export function isRowRefusal(error: unknown): boolean {
  if (error instanceof RangeError) return true;
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^(22|23)[0-9A-Z]{3}$/.test(code);
}
