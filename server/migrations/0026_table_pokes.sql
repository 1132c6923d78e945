-- A poke names the table of the row that changed: `<owner id>:<table>` (docs/sync-protocol.md,
-- The change feed). A device's socket poked for some tables reads those tables' changes alone —
-- for a mileage write about half the statement of every table (bench/README.md,
-- feed-diff-tables) — and runs the full diff when it must. The notifications of a transaction
-- still collapse: identical payloads once, so a transaction of three tables pokes three times,
-- which the socket takes as one run.
-- A row that leaves its owner pokes the previous owner without a table: the full diff.
CREATE OR REPLACE FUNCTION fieldchart_notify_owner() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    PERFORM pg_notify('fieldchart_sync', OLD.owner_id::text || ':' || TG_TABLE_NAME);
  ELSE
    PERFORM pg_notify('fieldchart_sync', NEW.owner_id::text || ':' || TG_TABLE_NAME);
    IF TG_OP = 'UPDATE' AND NEW.owner_id IS DISTINCT FROM OLD.owner_id THEN
      PERFORM pg_notify('fieldchart_sync', OLD.owner_id::text);
    END IF;
  END IF;
  RETURN NULL;
END;
$$;
