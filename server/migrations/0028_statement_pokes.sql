-- A poke once per statement and owner, not once per row. The pokes are the same — `<owner id>:<table>`
-- for each owner of a row a statement inserted, updated or deleted (migration 0026), and the
-- previous owner's bare id when a row leaves its owner — and a transaction's identical pokes
-- collapsed at commit as before, but the per-row trigger called PL/pgSQL and pg_notify for every
-- row: 1,000 timer events took one INSERT 14.3 ms with it and 11.8 ms with this (PostgreSQL; PGlite
-- 29.2 and 24.6 ms), and a device's batch of 1,000 queued mutations writes about 1,400 rows across
-- these tables (bench/README.md, sync-reconcile, stop 54). A statement-level trigger
-- reads the statement's rows once (a transition table) and pokes each distinct owner. The row
-- that leaves its owner keeps a row trigger, whose WHEN skips every other row without a call.
CREATE FUNCTION fieldchart_notify_owners() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    PERFORM pg_notify('fieldchart_sync', o.owner_id::text || ':' || TG_TABLE_NAME) FROM (SELECT DISTINCT owner_id FROM old_rows) o;
  ELSE
    PERFORM pg_notify('fieldchart_sync', n.owner_id::text || ':' || TG_TABLE_NAME) FROM (SELECT DISTINCT owner_id FROM new_rows) n;
  END IF;
  RETURN NULL;
END;
$$;
--> statement-breakpoint
CREATE FUNCTION fieldchart_notify_previous_owner() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('fieldchart_sync', OLD.owner_id::text);
  RETURN NULL;
END;
$$;
--> statement-breakpoint
-- The same four triggers on every synced table, in place of its row trigger.
DO $$
DECLARE
  t text;
BEGIN
  FOREACH t IN ARRAY ARRAY['patients', 'patient_referrals', 'visits', 'timer_events', 'soap_notes', 'visit_mileage', 'notifications', 'ai_transcriptions'] LOOP
    EXECUTE format('DROP TRIGGER %I ON %I', t || '_notify', t);
    EXECUTE format('CREATE TRIGGER %I AFTER INSERT ON %I REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION fieldchart_notify_owners()', t || '_notify_insert', t);
    EXECUTE format('CREATE TRIGGER %I AFTER UPDATE ON %I REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION fieldchart_notify_owners()', t || '_notify_update', t);
    EXECUTE format('CREATE TRIGGER %I AFTER DELETE ON %I REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION fieldchart_notify_owners()', t || '_notify_delete', t);
    EXECUTE format('CREATE TRIGGER %I AFTER UPDATE ON %I FOR EACH ROW WHEN (NEW.owner_id IS DISTINCT FROM OLD.owner_id) EXECUTE FUNCTION fieldchart_notify_previous_owner()', t || '_notify_owner_left', t);
  END LOOP;
END
$$;
--> statement-breakpoint
DROP FUNCTION fieldchart_notify_owner();
