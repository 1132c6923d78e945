-- Synced clinical tables take a fresh row_version on every update (see 0002).
CREATE TRIGGER patients_row_version BEFORE UPDATE ON patients
  FOR EACH ROW EXECUTE FUNCTION fieldchart_bump_row_version();
--> statement-breakpoint
CREATE TRIGGER patient_referrals_row_version BEFORE UPDATE ON patient_referrals
  FOR EACH ROW EXECUTE FUNCTION fieldchart_bump_row_version();
--> statement-breakpoint
CREATE TRIGGER visits_row_version BEFORE UPDATE ON visits
  FOR EACH ROW EXECUTE FUNCTION fieldchart_bump_row_version();
--> statement-breakpoint
CREATE TRIGGER timer_events_row_version BEFORE UPDATE ON timer_events
  FOR EACH ROW EXECUTE FUNCTION fieldchart_bump_row_version();
--> statement-breakpoint
CREATE TRIGGER soap_notes_row_version BEFORE UPDATE ON soap_notes
  FOR EACH ROW EXECUTE FUNCTION fieldchart_bump_row_version();
--> statement-breakpoint
CREATE TRIGGER visit_mileage_row_version BEFORE UPDATE ON visit_mileage
  FOR EACH ROW EXECUTE FUNCTION fieldchart_bump_row_version();
