CREATE TABLE "ai_transcriptions" (
	"id" uuid PRIMARY KEY NOT NULL,
	"owner_id" uuid NOT NULL,
	"visit_id" uuid NOT NULL,
	"audio_id" uuid NOT NULL,
	"discipline" text NOT NULL,
	"encounter_type" text NOT NULL,
	"status" text DEFAULT 'processing' NOT NULL,
	"raw_transcript_enc" text,
	"segments_enc" text,
	"generated_soap_enc" text,
	"source_map_enc" text,
	"verification_flags_enc" text,
	"vital_signs_enc" text,
	"confidence_summary" jsonb,
	"not_mentioned" text[],
	"error_message" text,
	"error_code" text,
	"attempts" integer DEFAULT 0 NOT NULL,
	"audio_duration_ms" integer,
	"stt_engine" text,
	"generator" text,
	"started_at" timestamp with time zone,
	"finished_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"row_version" bigint DEFAULT nextval('sync_row_version') NOT NULL,
	"deleted_at" timestamp with time zone,
	"txid" "xid8" DEFAULT pg_current_xact_id() NOT NULL,
	CONSTRAINT "ai_transcriptions_status_check" CHECK ("ai_transcriptions"."status" in ('processing', 'completed', 'failed'))
);
--> statement-breakpoint
CREATE TABLE "job_workers" (
	"worker_id" text PRIMARY KEY NOT NULL,
	"lock_key" integer NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
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
	"cipher_bytes" bigint DEFAULT 0 NOT NULL,
	"data_key_enc" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "ai_transcriptions" ADD CONSTRAINT "ai_transcriptions_owner_id_users_id_fk" FOREIGN KEY ("owner_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "ai_transcriptions" ADD CONSTRAINT "ai_transcriptions_visit_id_visits_id_fk" FOREIGN KEY ("visit_id") REFERENCES "public"."visits"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "audio_files" ADD CONSTRAINT "audio_files_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "audio_files" ADD CONSTRAINT "audio_files_visit_id_visits_id_fk" FOREIGN KEY ("visit_id") REFERENCES "public"."visits"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "audio_uploads" ADD CONSTRAINT "audio_uploads_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "ai_transcriptions_owner_txid_idx" ON "ai_transcriptions" USING btree ("owner_id","txid");--> statement-breakpoint
CREATE INDEX "ai_transcriptions_visit_idx" ON "ai_transcriptions" USING btree ("visit_id");--> statement-breakpoint
CREATE INDEX "ai_transcriptions_owner_created_idx" ON "ai_transcriptions" USING btree ("owner_id","created_at");--> statement-breakpoint
CREATE INDEX "audio_files_user_idx" ON "audio_files" USING btree ("user_id");--> statement-breakpoint
CREATE INDEX "audio_files_visit_idx" ON "audio_files" USING btree ("visit_id");--> statement-breakpoint
CREATE INDEX "audio_uploads_user_idx" ON "audio_uploads" USING btree ("user_id");--> statement-breakpoint
CREATE INDEX "audio_uploads_expires_idx" ON "audio_uploads" USING btree ("expires_at");