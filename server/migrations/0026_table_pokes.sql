-- A poke names the table of the row that changed: `<owner id>:<table>` (docs/sync-protocol.md,
-- The change feed). A device's socket poked for one table reads that table's changes alone — for
-- a mileage write about half the statement of every table (bench/README.md, feed-diff-tables) —
-- and runs the full diff for anything else. The notifications of a transaction still collapse:
-- identical payloads once, so a transaction of three tables pokes three times, which the socket
-- takes as one full diff.
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
