CREATE TABLE "geocode_cache" (
	"address_key" text PRIMARY KEY NOT NULL,
	"source" text NOT NULL,
	"point_enc" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "scheduling_policies" (
	"user_id" uuid PRIMARY KEY NOT NULL,
	"home_base_address_enc" text,
	"home_base_lat" double precision,
	"home_base_lng" double precision,
	"default_visit_minutes" integer DEFAULT 45 NOT NULL,
	"buffer_minutes" integer DEFAULT 10 NOT NULL,
	"day_start" text DEFAULT '08:00' NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "scheduling_policies" ADD CONSTRAINT "scheduling_policies_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;