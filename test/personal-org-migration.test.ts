// Migration 054 gives back their personal organization to the users an earlier gateway let
// lose it (a second owner removed or demoted them there), and from then on Postgres itself
// keeps every user the owner of theirs (decision 359).
import { describe, expect, it } from 'vitest';
import { createUser } from '../src/accounts/users.js';
import { migrate } from '../src/db/migrate.js';
import { withDatabase } from './support/scratch-database.js';

/** The database as it was before 054 (the migrations before it stay applied). */
const BEFORE_054 = `DROP TRIGGER org_memberships_keep_personal ON org_memberships;
  DROP FUNCTION org_memberships_keep_personal();
  DROP TABLE org_invitations;
  DELETE FROM schema_migrations WHERE name = '054_org_invitations.sql'`;

const PASSWORD = 'correct horse battery staple';

describe('migration 054 and the personal organization', () => {
  it('restores a removed or demoted user as the owner of their personal organization, then refuses either', async () => {
    await withDatabase('personal_org_repair', BEFORE_054, async (db) => {
      const removed = await createUser(db, { email: 'removed@example.com', password: PASSWORD });
      const demoted = await createUser(db, { email: 'demoted@example.com', password: PASSWORD });
      const intact = await createUser(db, { email: 'intact@example.com', password: PASSWORD });
      // what a second owner could do before 054
      await db.query('DELETE FROM org_memberships WHERE org_id = $1 AND user_id = $2', [
        removed.personal_org_id,
        removed.user_id,
      ]);
      await db.query(
        "UPDATE org_memberships SET role = 'viewer' WHERE org_id = $1 AND user_id = $2",
        [demoted.personal_org_id, demoted.user_id],
      );
      expect(await migrate(db)).toEqual(['054_org_invitations.sql']);
      const { rows } = await db.query<{ email: string; role: string | null }>(
        `SELECT u.email, m.role FROM dashboard_users u
           LEFT JOIN org_memberships m ON m.org_id = u.personal_org_id AND m.user_id = u.id
          ORDER BY u.email`,
      );
      expect(rows).toEqual([
        { email: 'demoted@example.com', role: 'owner' },
        { email: 'intact@example.com', role: 'owner' },
        { email: 'removed@example.com', role: 'owner' },
      ]);
      await expect(
        db.query('DELETE FROM org_memberships WHERE org_id = $1 AND user_id = $2', [
          intact.personal_org_id,
          intact.user_id,
        ]),
      ).rejects.toThrow('a user stays the owner of their personal organization');
      await expect(
        db.query("UPDATE org_memberships SET role = 'admin' WHERE org_id = $1 AND user_id = $2", [
          intact.personal_org_id,
          intact.user_id,
        ]),
      ).rejects.toThrow('a user stays the owner of their personal organization');
      // deleting the user takes their memberships with them
      await db.query('DELETE FROM dashboard_users WHERE id = $1', [intact.user_id]);
      const left = await db.query('SELECT 1 FROM org_memberships WHERE user_id = $1', [
        intact.user_id,
      ]);
      expect(left.rowCount).toBe(0);
    });
  });
});
