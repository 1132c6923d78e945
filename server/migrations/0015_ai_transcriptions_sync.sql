-- ai_transcriptions is synced to the owner's devices as the `ai_status` rows of the change
-- feed: every update takes a fresh row_version and txid (0002/0007), and every change pokes
-- the owner's sockets on commit (0008). Idempotent, so a regenerated numbering can re-run it.
DROP TRIGGER IF EXISTS ai_transcriptions_row_version ON ai_transcriptions;
--> statement-breakpoint
CREATE TRIGGER ai_transcriptions_row_version BEFORE UPDATE ON ai_transcriptions
  FOR EACH ROW EXECUTE FUNCTION fieldchart_bump_row_version();
--> statement-breakpoint
DROP TRIGGER IF EXISTS ai_transcriptions_notify ON ai_transcriptions;
--> statement-breakpoint
CREATE TRIGGER ai_transcriptions_notify AFTER INSERT OR UPDATE OR DELETE ON ai_transcriptions
  FOR EACH ROW EXECUTE FUNCTION fieldchart_notify_owner();
