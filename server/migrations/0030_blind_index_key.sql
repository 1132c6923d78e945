ALTER TABLE "patients" ADD COLUMN "name_search_key" text;--> statement-breakpoint
ALTER TABLE "geocode_cache" ADD COLUMN "index_key_id" text;