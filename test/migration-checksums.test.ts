// A database records each migration it ran, and never runs it again: a file changed after
// that would leave the database without the change while the code expects it. Each applied
// migration's checksum is kept, and a changed file stops the boot with the migration named
// (decision 326).
import { createHash } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { migrate, migrationChecksum, MigrationChangedError } from '../src/db/migrate.js';
import type { DbPool } from '../src/db/pool.js';
import { withDatabase } from './support/scratch-database.js';

const checksums = async (db: DbPool): Promise<Map<string, string | null>> =>
  new Map(
    (
      await db.query<{ name: string; checksum: string | null }>(
        'SELECT name, checksum FROM schema_migrations ORDER BY name',
      )
    ).rows.map((row) => [row.name, row.checksum]),
  );

describe('migration checksums', () => {
  it('keeps a sha-256 per applied migration, and a second run changes nothing', async () => {
    await withDatabase('checksums_kept', 'SELECT 1', async (db) => {
      const kept = await checksums(db);
      const files = readdirSync('src/db/migrations').filter((name) => name.endsWith('.sql'));
      expect([...kept.keys()]).toEqual(files.sort());
      for (const checksum of kept.values()) expect(checksum).toMatch(/^[0-9a-f]{64}$/);
      expect(await migrate(db)).toEqual([]);
      expect(await checksums(db)).toEqual(kept);
    });
  });

  it('refuses to go on when an applied migration no longer reads as it did', async () => {
    await withDatabase(
      'checksums_changed',
      `UPDATE schema_migrations SET checksum = repeat('0', 64) WHERE name = '012_provider_ids.sql'`,
      async (db) => {
        const refused = await migrate(db).then(
          () => undefined,
          (error: unknown) => error,
        );
        expect(refused).toBeInstanceOf(MigrationChangedError);
        expect((refused as Error).message).toBe(
          'migration 012_provider_ids.sql was changed after this database applied it; ' +
            'restore it as it was and put the change in a new migration',
        );
      },
    );
  });

  it('records the checksums of migrations applied before they were kept', async () => {
    await withDatabase(
      'checksums_backfilled',
      'UPDATE schema_migrations SET checksum = NULL',
      async (db) => {
        expect(await migrate(db)).toEqual([]);
        const kept = await checksums(db);
        for (const checksum of kept.values()) expect(checksum).toMatch(/^[0-9a-f]{64}$/);
      },
    );
  });
});

describe('migrationChecksum', () => {
  it('reads a file the same whatever its line endings or byte-order mark (a Windows checkout)', () => {
    const unix = '-- a migration\nALTER TABLE t ADD COLUMN c integer;\n';
    const windows = unix.replaceAll('\n', '\r\n');
    expect(migrationChecksum(windows)).toBe(migrationChecksum(unix));
    expect(migrationChecksum(`\uFEFF${unix}`)).toBe(migrationChecksum(unix));
    // What databases already keep: the sha-256 of the LF file as it is.
    expect(migrationChecksum(unix)).toBe(createHash('sha256').update(unix).digest('hex'));
    expect(migrationChecksum(`${unix}-- edited\n`)).not.toBe(migrationChecksum(unix));
  });
});
