// Migrations: numbered SQL files in src/db/migrations, applied once each, in order, under an
// advisory lock so that many instances booting together apply them exactly once. Each applied
// migration's checksum is kept: a file changed after it was applied stops the boot (decision
// 326), since a database that ran it never runs it again.
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import pg from 'pg';
import { CONNECTION_OPTIONS, type DbPool } from './pool.js';

/** The SQL lives beside the TypeScript sources; dist/ code reads it from src/. */
const migrationsDir = fileURLToPath(new URL('../../../src/db/migrations/', import.meta.url));
const sourceMigrationsDir = fileURLToPath(new URL('./migrations/', import.meta.url));
const MIGRATION_LOCK_ID = 7_207_431_001;

async function migrationFiles(): Promise<{ dir: string; names: string[] }> {
  for (const dir of [sourceMigrationsDir, migrationsDir]) {
    try {
      const names = (await readdir(dir)).filter((name) => /^\d{3}_[\w-]+\.sql$/.test(name));
      if (names.length > 0) return { dir, names: names.sort() };
    } catch {
      // try the next location
    }
  }
  throw new Error('no migration files found');
}

/**
 * Creates the database named in the URL when it does not exist (local development, CI).
 * `connectTimeoutMs`: how long each connection may take to open (unbounded when omitted).
 */
export async function ensureDatabase(
  databaseUrl: string,
  connectTimeoutMs?: number,
): Promise<void> {
  const options = {
    ...CONNECTION_OPTIONS,
    ...(connectTimeoutMs !== undefined && { connectionTimeoutMillis: connectTimeoutMs }),
  };
  const url = new URL(databaseUrl);
  const name = decodeURIComponent(url.pathname.slice(1));
  if (!name) return;
  const probe = new pg.Client({ connectionString: databaseUrl, ...options });
  try {
    await probe.connect();
    return;
  } catch (error) {
    if ((error as { code?: string }).code !== '3D000') throw error; // 3D000: no such database
  } finally {
    await probe.end().catch(() => undefined);
  }
  url.pathname = '/postgres';
  const admin = new pg.Client({ connectionString: url.toString(), ...options });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`);
  } catch (error) {
    // Created concurrently by another instance: 42P04, or 23505 when both passed the
    // catalogue check at once (pg_database_datname_index).
    const code = (error as { code?: string }).code;
    if (code !== '42P04' && code !== '23505') throw error;
  } finally {
    await admin.end();
  }
}

export async function migrate(pool: DbPool): Promise<string[]> {
  const { dir, names } = await migrationFiles();
  const client = await pool.connect();
  const applied: string[] = [];
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_ID]);
    await client.query(
      `CREATE TABLE IF NOT EXISTS schema_migrations (
         name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now());
       ALTER TABLE schema_migrations ADD COLUMN IF NOT EXISTS checksum text`,
    );
    const done = new Map(
      (
        await client.query<{ name: string; checksum: string | null }>(
          'SELECT name, checksum FROM schema_migrations',
        )
      ).rows.map((row) => [row.name, row.checksum]),
    );
    for (const name of names) {
      const sql = await readFile(path.join(dir, name), 'utf8');
      const checksum = migrationChecksum(sql);
      if (done.has(name)) {
        const recorded = done.get(name);
        if (recorded === null) {
          // Applied before checksums were kept: the file as it is now is taken as applied.
          await client.query('UPDATE schema_migrations SET checksum = $2 WHERE name = $1', [
            name,
            checksum,
          ]);
        } else if (recorded !== checksum) {
          throw new MigrationChangedError(name);
        }
        continue;
      }
      await client.query('BEGIN');
      try {
        await client.query(sql);
        await client.query('INSERT INTO schema_migrations (name, checksum) VALUES ($1, $2)', [
          name,
          checksum,
        ]);
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK');
        throw new Error(`migration ${name} failed: ${(error as Error).message}`);
      }
      applied.push(name);
    }
    // Partitions for this month and the next exist before any usage arrives.
    await client.query(
      `SELECT gw_ensure_usage_partition(date_trunc('month', now() AT TIME ZONE 'UTC')::date),
              gw_ensure_usage_partition((date_trunc('month', now() AT TIME ZONE 'UTC') + interval '1 month')::date)`,
    );
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_ID]).catch(() => undefined);
    client.release();
  }
  return applied;
}

/**
 * A migration's checksum: the SHA-256 of its text with LF line endings and no byte-order mark,
 * so a checkout that writes CRLF (Git for Windows' default, without a .gitattributes) or an
 * editor's BOM does not read as a changed migration; Flyway's checksum ignores both too. An
 * LF file hashes as it is, so the checksums databases already keep still match.
 */
export function migrationChecksum(sql: string): string {
  const text = sql.replace(/^\uFEFF/, '').replace(/\r\n/g, '\n');
  return createHash('sha256').update(text).digest('hex');
}

/**
 * An applied migration's file no longer reads as it did when applied: the database will never
 * run the new text, so the code that expects it would meet a schema it does not know.
 */
export class MigrationChangedError extends Error {
  override readonly name = 'MigrationChangedError';

  constructor(readonly migration: string) {
    super(
      `migration ${migration} was changed after this database applied it; ` +
        'restore it as it was and put the change in a new migration',
    );
  }
}
