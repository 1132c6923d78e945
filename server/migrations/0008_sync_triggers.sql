-- The change feed's stamps and pokes (docs/sync-protocol.md).
--
-- Every update of a synced row also records the writing transaction (txid, xid8): the feed's
-- cursor is a snapshot, and a row is new to a device when that transaction was not visible in
-- the device's snapshot. Inserts take it from the column default.
CREATE OR REPLACE FUNCTION fieldchart_bump_row_version() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  NEW.row_version := nextval('sync_row_version');
  NEW.txid := pg_current_xact_id();
  RETURN NEW;
END;
$$;
--> statement-breakpoint
-- "Poke, then pull": a change to a clinician's row notifies their owner id on commit. The
-- payload carries no data; identical notifications in one transaction collapse into one.
CREATE OR REPLACE FUNCTION fieldchart_notify_owner() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    PERFORM pg_notify('fieldchart_sync', OLD.owner_id::text);
  ELSE
    PERFORM pg_notify('fieldchart_sync', NEW.owner_id::text);
    IF TG_OP = 'UPDATE' AND NEW.owner_id IS DISTINCT FROM OLD.owner_id THEN
      PERFORM pg_notify('fieldchart_sync', OLD.owner_id::text);
    END IF;
  END IF;
  RETURN NULL;
END;
$$;
--> statement-breakpoint
CREATE TRIGGER patients_notify AFTER INSERT OR UPDATE OR DELETE ON patients
  FOR EACH ROW EXECUTE FUNCTION fieldchart_notify_owner();
--> statement-breakpoint
CREATE TRIGGER patient_referrals_notify AFTER INSERT OR UPDATE OR DELETE ON patient_referrals
  FOR EACH ROW EXECUTE FUNCTION fieldchart_notify_owner();
--> statement-breakpoint
CREATE TRIGGER visits_notify AFTER INSERT OR UPDATE OR DELETE ON visits
  FOR EACH ROW EXECUTE FUNCTION fieldchart_notify_owner();
--> statement-breakpoint
CREATE TRIGGER timer_events_notify AFTER INSERT OR UPDATE OR DELETE ON timer_events
  FOR EACH ROW EXECUTE FUNCTION fieldchart_notify_owner();
--> statement-breakpoint
CREATE TRIGGER soap_notes_notify AFTER INSERT OR UPDATE OR DELETE ON soap_notes
  FOR EACH ROW EXECUTE FUNCTION fieldchart_notify_owner();
--> statement-breakpoint
CREATE TRIGGER visit_mileage_notify AFTER INSERT OR UPDATE OR DELETE ON visit_mileage
  FOR EACH ROW EXECUTE FUNCTION fieldchart_notify_owner();
--> statement-breakpoint
-- Organization configuration reaches every member's device: a change to the organization
-- pokes each member; a personal feature change pokes the user.
CREATE OR REPLACE FUNCTION fieldchart_notify_members() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('fieldchart_sync', m.user_id::text)
    FROM organization_members m WHERE m.organization_id = NEW.id;
  RETURN NULL;
END;
$$;
--> statement-breakpoint
CREATE TRIGGER organizations_notify AFTER UPDATE ON organizations
  FOR EACH ROW EXECUTE FUNCTION fieldchart_notify_members();
--> statement-breakpoint
-- Who may hold a socket: a revoked session, a disabled user or a changed seat pokes the user
-- on `fieldchart_session`; each node re-checks that user's sockets (close 4401/4403/4410).
CREATE OR REPLACE FUNCTION fieldchart_notify_session() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF TG_TABLE_NAME = 'users' AND TG_OP = 'DELETE' THEN
    PERFORM pg_notify('fieldchart_session', OLD.id::text);
  ELSIF TG_TABLE_NAME = 'users' THEN
    IF NEW.disabled_at IS DISTINCT FROM OLD.disabled_at THEN
      PERFORM pg_notify('fieldchart_session', NEW.id::text);
    END IF;
    IF NEW.feature_overrides IS DISTINCT FROM OLD.feature_overrides THEN
      PERFORM pg_notify('fieldchart_sync', NEW.id::text);
    END IF;
  ELSIF TG_TABLE_NAME = 'sessions' THEN
    IF NEW.revoked_at IS DISTINCT FROM OLD.revoked_at THEN
      PERFORM pg_notify('fieldchart_session', NEW.user_id::text);
    END IF;
  ELSIF TG_OP = 'DELETE' THEN
    PERFORM pg_notify('fieldchart_session', OLD.user_id::text);
  ELSE
    PERFORM pg_notify('fieldchart_session', NEW.user_id::text);
    IF TG_OP = 'UPDATE' AND NEW.user_id IS DISTINCT FROM OLD.user_id THEN
      PERFORM pg_notify('fieldchart_session', OLD.user_id::text);
    END IF;
  END IF;
  RETURN NULL;
END;
$$;
--> statement-breakpoint
CREATE TRIGGER users_notify_session AFTER UPDATE OR DELETE ON users
  FOR EACH ROW EXECUTE FUNCTION fieldchart_notify_session();
--> statement-breakpoint
CREATE TRIGGER sessions_notify_session AFTER UPDATE ON sessions
  FOR EACH ROW EXECUTE FUNCTION fieldchart_notify_session();
--> statement-breakpoint
CREATE TRIGGER organization_members_notify_session AFTER INSERT OR UPDATE OR DELETE ON organization_members
  FOR EACH ROW EXECUTE FUNCTION fieldchart_notify_session();
