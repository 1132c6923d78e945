/**
 * A clinician's day as the feed benches find it: visits today, each with a signed-off SOAP
 * note (four sealed sections of about what a clinician writes), three timer events and mileage.
 */
import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import type { Db } from '../../server/src/db/database.ts';
import type { PhiCrypto } from '../../server/src/security/phi-crypto.ts';

const SECTION = 'Patient reports improved tolerance to stairs; ambulated 150 ft with rolling walker, min assist. '.repeat(8);

/** A new user with `visits` visits today; answers the user's id and the visits' ids. */
export async function seedVisitDay(db: Db, phi: PhiCrypto, visits: number): Promise<{ user: string; visitIds: string[] }> {
  const user = randomUUID();
  const today = new Date().toISOString().slice(0, 10);
  await db.execute(sql`insert into users (id, email, first_name, last_name) values (${user}::uuid, ${`${user}@bench.invalid`}, 'Bench', 'Clinician')`);
  const visitIds = Array.from({ length: visits }, () => randomUUID());
  for (const v of visitIds) {
    const note = randomUUID();
    const sealed = (column: string) => phi.seal(SECTION, 'soap_notes', column, note);
    await db.execute(sql`insert into visits (id, owner_id, visit_date, start_time) values (${v}::uuid, ${user}::uuid, ${today}::date, '09:00')`);
    await db.execute(sql`insert into soap_notes (id, visit_id, owner_id, subjective_enc, objective_enc, assessment_enc, plan_enc)
      values (${note}::uuid, ${v}::uuid, ${user}::uuid, ${sealed('subjective_enc')}, ${sealed('objective_enc')}, ${sealed('assessment_enc')}, ${sealed('plan_enc')})`);
    await db.execute(sql`insert into timer_events (visit_id, owner_id, event_type, event_time)
      select ${v}::uuid, ${user}::uuid, t, now() - (n || ' minutes')::interval
      from unnest(array['start_travel', 'arrive', 'start_documentation']) with ordinality as e(t, n)`);
    await db.execute(sql`insert into visit_mileage (visit_id, owner_id, total_miles, recorded_at) values (${v}::uuid, ${user}::uuid, 12.5, now())`);
  }
  return { user, visitIds };
}
