-- Notifications are a synced feed table (docs/sync-protocol.md): every update takes a fresh
-- row_version and txid (the function of 0008), and every change pokes the owner's sockets.
-- Idempotent, so a regenerated branch migration can be applied beside it.
DROP TRIGGER IF EXISTS notifications_row_version ON notifications;
--> statement-breakpoint
CREATE TRIGGER notifications_row_version BEFORE UPDATE ON notifications
  FOR EACH ROW EXECUTE FUNCTION fieldchart_bump_row_version();
--> statement-breakpoint
DROP TRIGGER IF EXISTS notifications_notify ON notifications;
--> statement-breakpoint
CREATE TRIGGER notifications_notify AFTER INSERT OR UPDATE OR DELETE ON notifications
  FOR EACH ROW EXECUTE FUNCTION fieldchart_notify_owner();
