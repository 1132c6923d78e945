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
DROP TRIGGER patients_notify ON patients;
--> statement-breakpoint
CREATE TRIGGER patients_notify_insert AFTER INSERT ON patients REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION fieldchart_notify_owners();
--> statement-breakpoint
CREATE TRIGGER patients_notify_update AFTER UPDATE ON patients REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION fieldchart_notify_owners();
--> statement-breakpoint
CREATE TRIGGER patients_notify_delete AFTER DELETE ON patients REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION fieldchart_notify_owners();
--> statement-breakpoint
CREATE TRIGGER patients_notify_owner_left AFTER UPDATE ON patients FOR EACH ROW WHEN (NEW.owner_id IS DISTINCT FROM OLD.owner_id) EXECUTE FUNCTION fieldchart_notify_previous_owner();
--> statement-breakpoint
DROP TRIGGER patient_referrals_notify ON patient_referrals;
--> statement-breakpoint
CREATE TRIGGER patient_referrals_notify_insert AFTER INSERT ON patient_referrals REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION fieldchart_notify_owners();
--> statement-breakpoint
CREATE TRIGGER patient_referrals_notify_update AFTER UPDATE ON patient_referrals REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION fieldchart_notify_owners();
--> statement-breakpoint
CREATE TRIGGER patient_referrals_notify_delete AFTER DELETE ON patient_referrals REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION fieldchart_notify_owners();
--> statement-breakpoint
CREATE TRIGGER patient_referrals_notify_owner_left AFTER UPDATE ON patient_referrals FOR EACH ROW WHEN (NEW.owner_id IS DISTINCT FROM OLD.owner_id) EXECUTE FUNCTION fieldchart_notify_previous_owner();
--> statement-breakpoint
DROP TRIGGER visits_notify ON visits;
--> statement-breakpoint
CREATE TRIGGER visits_notify_insert AFTER INSERT ON visits REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION fieldchart_notify_owners();
--> statement-breakpoint
CREATE TRIGGER visits_notify_update AFTER UPDATE ON visits REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION fieldchart_notify_owners();
--> statement-breakpoint
CREATE TRIGGER visits_notify_delete AFTER DELETE ON visits REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION fieldchart_notify_owners();
--> statement-breakpoint
CREATE TRIGGER visits_notify_owner_left AFTER UPDATE ON visits FOR EACH ROW WHEN (NEW.owner_id IS DISTINCT FROM OLD.owner_id) EXECUTE FUNCTION fieldchart_notify_previous_owner();
--> statement-breakpoint
DROP TRIGGER timer_events_notify ON timer_events;
--> statement-breakpoint
CREATE TRIGGER timer_events_notify_insert AFTER INSERT ON timer_events REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION fieldchart_notify_owners();
--> statement-breakpoint
CREATE TRIGGER timer_events_notify_update AFTER UPDATE ON timer_events REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION fieldchart_notify_owners();
--> statement-breakpoint
CREATE TRIGGER timer_events_notify_delete AFTER DELETE ON timer_events REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION fieldchart_notify_owners();
--> statement-breakpoint
CREATE TRIGGER timer_events_notify_owner_left AFTER UPDATE ON timer_events FOR EACH ROW WHEN (NEW.owner_id IS DISTINCT FROM OLD.owner_id) EXECUTE FUNCTION fieldchart_notify_previous_owner();
--> statement-breakpoint
DROP TRIGGER soap_notes_notify ON soap_notes;
--> statement-breakpoint
CREATE TRIGGER soap_notes_notify_insert AFTER INSERT ON soap_notes REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION fieldchart_notify_owners();
--> statement-breakpoint
CREATE TRIGGER soap_notes_notify_update AFTER UPDATE ON soap_notes REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION fieldchart_notify_owners();
--> statement-breakpoint
CREATE TRIGGER soap_notes_notify_delete AFTER DELETE ON soap_notes REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION fieldchart_notify_owners();
--> statement-breakpoint
CREATE TRIGGER soap_notes_notify_owner_left AFTER UPDATE ON soap_notes FOR EACH ROW WHEN (NEW.owner_id IS DISTINCT FROM OLD.owner_id) EXECUTE FUNCTION fieldchart_notify_previous_owner();
--> statement-breakpoint
DROP TRIGGER visit_mileage_notify ON visit_mileage;
--> statement-breakpoint
CREATE TRIGGER visit_mileage_notify_insert AFTER INSERT ON visit_mileage REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION fieldchart_notify_owners();
--> statement-breakpoint
CREATE TRIGGER visit_mileage_notify_update AFTER UPDATE ON visit_mileage REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION fieldchart_notify_owners();
--> statement-breakpoint
CREATE TRIGGER visit_mileage_notify_delete AFTER DELETE ON visit_mileage REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION fieldchart_notify_owners();
--> statement-breakpoint
CREATE TRIGGER visit_mileage_notify_owner_left AFTER UPDATE ON visit_mileage FOR EACH ROW WHEN (NEW.owner_id IS DISTINCT FROM OLD.owner_id) EXECUTE FUNCTION fieldchart_notify_previous_owner();
--> statement-breakpoint
DROP TRIGGER notifications_notify ON notifications;
--> statement-breakpoint
CREATE TRIGGER notifications_notify_insert AFTER INSERT ON notifications REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION fieldchart_notify_owners();
--> statement-breakpoint
CREATE TRIGGER notifications_notify_update AFTER UPDATE ON notifications REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION fieldchart_notify_owners();
--> statement-breakpoint
CREATE TRIGGER notifications_notify_delete AFTER DELETE ON notifications REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION fieldchart_notify_owners();
--> statement-breakpoint
CREATE TRIGGER notifications_notify_owner_left AFTER UPDATE ON notifications FOR EACH ROW WHEN (NEW.owner_id IS DISTINCT FROM OLD.owner_id) EXECUTE FUNCTION fieldchart_notify_previous_owner();
--> statement-breakpoint
DROP TRIGGER ai_transcriptions_notify ON ai_transcriptions;
--> statement-breakpoint
CREATE TRIGGER ai_transcriptions_notify_insert AFTER INSERT ON ai_transcriptions REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION fieldchart_notify_owners();
--> statement-breakpoint
CREATE TRIGGER ai_transcriptions_notify_update AFTER UPDATE ON ai_transcriptions REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION fieldchart_notify_owners();
--> statement-breakpoint
CREATE TRIGGER ai_transcriptions_notify_delete AFTER DELETE ON ai_transcriptions REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION fieldchart_notify_owners();
--> statement-breakpoint
CREATE TRIGGER ai_transcriptions_notify_owner_left AFTER UPDATE ON ai_transcriptions FOR EACH ROW WHEN (NEW.owner_id IS DISTINCT FROM OLD.owner_id) EXECUTE FUNCTION fieldchart_notify_previous_owner();
--> statement-breakpoint
DROP FUNCTION fieldchart_notify_owner();
