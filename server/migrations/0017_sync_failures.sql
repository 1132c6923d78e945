ALTER TABLE "sync_clients" ADD COLUMN "failing_mutation_id" bigint;--> statement-breakpoint
ALTER TABLE "sync_clients" ADD COLUMN "failing_attempts" integer DEFAULT 0 NOT NULL;