-- Every synced row takes a fresh row_version from the one sequence whenever it changes, so
-- a device's cursor (the highest version it has seen) finds every later change. New synced
-- tables attach the same function with their own trigger.
CREATE OR REPLACE FUNCTION fieldchart_bump_row_version() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  NEW.row_version := nextval('sync_row_version');
  RETURN NEW;
END;
$$;
--> statement-breakpoint
CREATE TRIGGER organizations_row_version BEFORE UPDATE ON organizations
  FOR EACH ROW EXECUTE FUNCTION fieldchart_bump_row_version();
