// Signing secrets at rest: sealed with the credentials master key (src/credentials/sealed-text.ts).
// Never stored or logged in the clear.
import type { SecretBox } from '../credentials/secret-box.js';
import { parseSealed, resealedText } from '../credentials/sealed-text.js';
import type { DbPool } from '../db/pool.js';

/**
 * Re-seals the signing secrets (of one organization, if given) that are not sealed under the
 * current master key; `gw credentials rewrap` runs it with the credentials' rewrap. Resolves
 * with how many endpoints changed.
 */
export async function rewrapSigningSecrets(
  db: DbPool,
  box: SecretBox,
  orgId?: string,
): Promise<number> {
  const { rows } = await db.query<{
    id: string;
    secret_sealed: string;
    previous_secret_sealed: string | null;
    earlier_secrets: Array<{ sealed: string; expires_at: string }>;
  }>(
    `SELECT id, secret_sealed, previous_secret_sealed, earlier_secrets FROM webhook_endpoints
      WHERE $1::text IS NULL OR org_id = $1`,
    [orgId ?? null],
  );
  const stale = (text: string | null): boolean =>
    text !== null && parseSealed(text).keyId !== box.currentKeyId;
  const reseal = (text: string | null): string | null =>
    text === null ? null : resealedText(box, text);
  let changed = 0;
  for (const row of rows) {
    const earlierStale = row.earlier_secrets.some((earlier) => stale(earlier.sealed));
    if (!stale(row.secret_sealed) && !stale(row.previous_secret_sealed) && !earlierStale) continue;
    const earlier = row.earlier_secrets.map((secret) => ({
      ...secret,
      sealed: reseal(secret.sealed)!,
    }));
    // Only if no rotation came in between (its secret is sealed under the current key).
    const { rowCount } = await db.query(
      `UPDATE webhook_endpoints SET secret_sealed = $2, previous_secret_sealed = $3,
              earlier_secrets = $5::jsonb
        WHERE id = $1 AND secret_sealed = $4`,
      [
        row.id,
        reseal(row.secret_sealed),
        reseal(row.previous_secret_sealed),
        row.secret_sealed,
        JSON.stringify(earlier),
      ],
    );
    changed += rowCount ?? 0;
  }
  return changed;
}
