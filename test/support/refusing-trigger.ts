// A write that fails inside Postgres, as a dropped connection would: a trigger raising an
// error for the rows it matches, there only while `body` runs.
//
// Creating and dropping a trigger locks its table against every write until the transactions
// writing it end. On the suite's shared database another file's webhook dispatcher holds its
// claim open for an attempt's whole length, and every writer queued behind the trigger's lock
// (the outbox, the claims) stalled with it: a CI run failed on that. So only a file with a
// database of its own (`isolatedContext(…, { ownDatabase: true })`) may use one.
import type pg from 'pg';
import { TEST_DATABASE_URL } from './env.js';

export interface RefusingTrigger {
  /** Unique among the file's triggers: lower-case letters, digits and `_`. */
  readonly name: string;
  readonly table: string;
  readonly before: 'INSERT' | 'UPDATE';
  /** The trigger's WHEN condition over NEW (and OLD for an update). */
  readonly when: string;
}

/** Runs `body` while writes to `trigger.table` matching `trigger.when` raise an error. */
export async function whileRefusing<T>(
  db: pg.Pool,
  trigger: RefusingTrigger,
  body: () => Promise<T>,
): Promise<T> {
  const { rows } = await db.query<{ name: string }>('SELECT current_database() AS name');
  if (rows[0]!.name === new URL(TEST_DATABASE_URL).pathname.slice(1)) {
    throw new Error('a refusing trigger needs a database of the file’s own (ownDatabase)');
  }
  const { name, table } = trigger;
  await db.query(
    `CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS
       $$ BEGIN RAISE EXCEPTION 'the ${table} refuses'; END $$`,
  );
  await db.query(
    `CREATE TRIGGER ${name} BEFORE ${trigger.before} ON ${table} FOR EACH ROW
       WHEN (${trigger.when}) EXECUTE FUNCTION ${name}()`,
  );
  try {
    return await body();
  } finally {
    await db.query(`DROP TRIGGER ${name} ON ${table}`);
    await db.query(`DROP FUNCTION ${name}()`);
  }
}

/** The revocation of the app connection `connectionId` (its status set to revoked) fails. */
export function connectionRevocationRefused(connectionId: string): RefusingTrigger {
  return {
    name: `refuse_${connectionId.toLowerCase()}`,
    table: 'app_connections',
    before: 'UPDATE',
    when: `OLD.id = '${connectionId}' AND NEW.status = 'revoked'`,
  };
}
