CREATE TABLE "audio_deletions" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"store" text NOT NULL,
	"storage_key" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "audio_files" (
	"id" uuid PRIMARY KEY NOT NULL,
	"user_id" uuid NOT NULL,
	"visit_id" uuid NOT NULL,
	"format" text NOT NULL,
	"bytes" bigint NOT NULL,
	"store" text NOT NULL,
	"storage_key" text NOT NULL,
	"data_key_enc" text NOT NULL,
	"purpose" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "audio_uploads" (
	"id" text PRIMARY KEY NOT NULL,
	"user_id" uuid NOT NULL,
	"size" bigint,
	"offset" bigint DEFAULT 0 NOT NULL,
	"frames" bigint DEFAULT 0 NOT NULL,
	"data_key_enc" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "audio_files" ADD CONSTRAINT "audio_files_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "audio_files" ADD CONSTRAINT "audio_files_visit_id_visits_id_fk" FOREIGN KEY ("visit_id") REFERENCES "public"."visits"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "audio_uploads" ADD CONSTRAINT "audio_uploads_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "audio_files_user_idx" ON "audio_files" USING btree ("user_id");--> statement-breakpoint
CREATE INDEX "audio_files_visit_idx" ON "audio_files" USING btree ("visit_id");--> statement-breakpoint
CREATE INDEX "audio_uploads_user_idx" ON "audio_uploads" USING btree ("user_id");--> statement-breakpoint
CREATE INDEX "audio_uploads_expires_idx" ON "audio_uploads" USING btree ("expires_at");