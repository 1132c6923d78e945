DROP INDEX "patient_referrals_owner_idx";--> statement-breakpoint
DROP INDEX "patient_referrals_row_version_idx";--> statement-breakpoint
DROP INDEX "patients_owner_idx";--> statement-breakpoint
DROP INDEX "patients_row_version_idx";--> statement-breakpoint
DROP INDEX "soap_notes_row_version_idx";--> statement-breakpoint
DROP INDEX "timer_events_row_version_idx";--> statement-breakpoint
DROP INDEX "visit_mileage_owner_idx";--> statement-breakpoint
DROP INDEX "visit_mileage_row_version_idx";--> statement-breakpoint
DROP INDEX "visits_row_version_idx";