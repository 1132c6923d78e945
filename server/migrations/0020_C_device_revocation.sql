ALTER TABLE "sync_clients" ADD COLUMN "revoked_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "sync_clients" ADD COLUMN "last_seen_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "sync_clients" ADD COLUMN "synced_organization_id" uuid;