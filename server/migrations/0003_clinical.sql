CREATE TABLE "audit_log" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"at" timestamp with time zone DEFAULT now() NOT NULL,
	"actor_user_id" uuid,
	"organization_id" uuid,
	"action" text NOT NULL,
	"resource_type" text NOT NULL,
	"resource_id" text,
	"outcome" text NOT NULL,
	"request_id" text,
	"details" jsonb DEFAULT '{}'::jsonb NOT NULL
);
--> statement-breakpoint
CREATE TABLE "clinician_settings" (
	"user_id" uuid PRIMARY KEY NOT NULL,
	"time_zone" text DEFAULT 'America/New_York' NOT NULL,
	"pay_rates" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"mileage_rate" numeric(8, 4) DEFAULT 0.7 NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "patient_referrals" (
	"id" uuid PRIMARY KEY NOT NULL,
	"patient_id" uuid NOT NULL,
	"owner_id" uuid NOT NULL,
	"organization_id" uuid,
	"status" text DEFAULT 'open' NOT NULL,
	"discipline" text,
	"diagnosis_codes" text[] DEFAULT '{}'::text[] NOT NULL,
	"referral_source" text,
	"start_of_care" date,
	"ordered_frequency" text,
	"discharged_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"row_version" bigint DEFAULT nextval('sync_row_version') NOT NULL,
	"deleted_at" timestamp with time zone,
	CONSTRAINT "patient_referrals_status_check" CHECK ("patient_referrals"."status" in ('open','discharged'))
);
--> statement-breakpoint
CREATE TABLE "patients" (
	"id" uuid PRIMARY KEY NOT NULL,
	"owner_id" uuid NOT NULL,
	"organization_id" uuid,
	"first_name_enc" text NOT NULL,
	"last_name_enc" text NOT NULL,
	"email_enc" text,
	"phone_enc" text,
	"address_enc" text,
	"name_search" text[] DEFAULT '{}'::text[] NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"row_version" bigint DEFAULT nextval('sync_row_version') NOT NULL,
	"deleted_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "soap_notes" (
	"id" uuid PRIMARY KEY NOT NULL,
	"visit_id" uuid NOT NULL,
	"owner_id" uuid NOT NULL,
	"subjective_enc" text NOT NULL,
	"objective_enc" text NOT NULL,
	"assessment_enc" text NOT NULL,
	"plan_enc" text NOT NULL,
	"vital_signs_enc" text,
	"vital_flags" text[] DEFAULT '{}'::text[] NOT NULL,
	"signature_enc" text,
	"signature_mime" text,
	"signed_at" timestamp with time zone,
	"review_flags" text[] DEFAULT '{}'::text[] NOT NULL,
	"submitted_at" timestamp with time zone DEFAULT now() NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"row_version" bigint DEFAULT nextval('sync_row_version') NOT NULL,
	"deleted_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "timer_events" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"visit_id" uuid NOT NULL,
	"owner_id" uuid NOT NULL,
	"event_type" text NOT NULL,
	"event_time" timestamp with time zone NOT NULL,
	"latitude" double precision,
	"longitude" double precision,
	"accuracy" double precision,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"row_version" bigint DEFAULT nextval('sync_row_version') NOT NULL,
	"deleted_at" timestamp with time zone,
	CONSTRAINT "timer_events_type_check" CHECK ("timer_events"."event_type" in ('start_travel','arrive','start_documentation','complete'))
);
--> statement-breakpoint
CREATE TABLE "visit_mileage" (
	"visit_id" uuid PRIMARY KEY NOT NULL,
	"owner_id" uuid NOT NULL,
	"total_miles" numeric(10, 2) NOT NULL,
	"travel_miles" numeric(10, 2),
	"onsite_miles" numeric(10, 2),
	"recorded_at" timestamp with time zone NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"row_version" bigint DEFAULT nextval('sync_row_version') NOT NULL,
	"deleted_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "visits" (
	"id" uuid PRIMARY KEY NOT NULL,
	"owner_id" uuid NOT NULL,
	"organization_id" uuid,
	"patient_id" uuid,
	"referral_id" uuid,
	"visit_date" date NOT NULL,
	"start_time" text NOT NULL,
	"duration_minutes" integer DEFAULT 45 NOT NULL,
	"status" text DEFAULT 'scheduled' NOT NULL,
	"visit_type" text DEFAULT 'routine' NOT NULL,
	"address_enc" text,
	"notes_enc" text,
	"ai_assisted" boolean DEFAULT false NOT NULL,
	"travel_started_at" timestamp with time zone,
	"arrived_at" timestamp with time zone,
	"arrival_lat" double precision,
	"arrival_lng" double precision,
	"arrival_accuracy" double precision,
	"documentation_started_at" timestamp with time zone,
	"departed_at" timestamp with time zone,
	"departure_lat" double precision,
	"departure_lng" double precision,
	"departure_accuracy" double precision,
	"drive_seconds" integer,
	"onsite_seconds" integer,
	"documentation_seconds" integer,
	"completed_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"row_version" bigint DEFAULT nextval('sync_row_version') NOT NULL,
	"deleted_at" timestamp with time zone,
	CONSTRAINT "visits_status_check" CHECK ("visits"."status" in ('scheduled','in_progress','completed','cancelled','missed'))
);
--> statement-breakpoint
ALTER TABLE "clinician_settings" ADD CONSTRAINT "clinician_settings_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "patient_referrals" ADD CONSTRAINT "patient_referrals_patient_id_patients_id_fk" FOREIGN KEY ("patient_id") REFERENCES "public"."patients"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "patient_referrals" ADD CONSTRAINT "patient_referrals_owner_id_users_id_fk" FOREIGN KEY ("owner_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "patient_referrals" ADD CONSTRAINT "patient_referrals_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "patients" ADD CONSTRAINT "patients_owner_id_users_id_fk" FOREIGN KEY ("owner_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "patients" ADD CONSTRAINT "patients_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "soap_notes" ADD CONSTRAINT "soap_notes_visit_id_visits_id_fk" FOREIGN KEY ("visit_id") REFERENCES "public"."visits"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "soap_notes" ADD CONSTRAINT "soap_notes_owner_id_users_id_fk" FOREIGN KEY ("owner_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "timer_events" ADD CONSTRAINT "timer_events_visit_id_visits_id_fk" FOREIGN KEY ("visit_id") REFERENCES "public"."visits"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "timer_events" ADD CONSTRAINT "timer_events_owner_id_users_id_fk" FOREIGN KEY ("owner_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "visit_mileage" ADD CONSTRAINT "visit_mileage_visit_id_visits_id_fk" FOREIGN KEY ("visit_id") REFERENCES "public"."visits"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "visit_mileage" ADD CONSTRAINT "visit_mileage_owner_id_users_id_fk" FOREIGN KEY ("owner_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "visits" ADD CONSTRAINT "visits_owner_id_users_id_fk" FOREIGN KEY ("owner_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "visits" ADD CONSTRAINT "visits_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "visits" ADD CONSTRAINT "visits_patient_id_patients_id_fk" FOREIGN KEY ("patient_id") REFERENCES "public"."patients"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "visits" ADD CONSTRAINT "visits_referral_id_patient_referrals_id_fk" FOREIGN KEY ("referral_id") REFERENCES "public"."patient_referrals"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "audit_log_at_idx" ON "audit_log" USING btree ("at");--> statement-breakpoint
CREATE INDEX "audit_log_actor_idx" ON "audit_log" USING btree ("actor_user_id","at");--> statement-breakpoint
CREATE INDEX "audit_log_resource_idx" ON "audit_log" USING btree ("resource_type","resource_id");--> statement-breakpoint
CREATE INDEX "patient_referrals_patient_idx" ON "patient_referrals" USING btree ("patient_id");--> statement-breakpoint
CREATE INDEX "patient_referrals_owner_idx" ON "patient_referrals" USING btree ("owner_id");--> statement-breakpoint
CREATE INDEX "patient_referrals_row_version_idx" ON "patient_referrals" USING btree ("row_version");--> statement-breakpoint
CREATE INDEX "patients_owner_idx" ON "patients" USING btree ("owner_id");--> statement-breakpoint
CREATE INDEX "patients_name_search_idx" ON "patients" USING gin ("name_search");--> statement-breakpoint
CREATE INDEX "patients_row_version_idx" ON "patients" USING btree ("row_version");--> statement-breakpoint
CREATE UNIQUE INDEX "soap_notes_visit_key" ON "soap_notes" USING btree ("visit_id");--> statement-breakpoint
CREATE INDEX "soap_notes_row_version_idx" ON "soap_notes" USING btree ("row_version");--> statement-breakpoint
CREATE UNIQUE INDEX "timer_events_identity_key" ON "timer_events" USING btree ("visit_id","event_type","event_time");--> statement-breakpoint
CREATE INDEX "timer_events_row_version_idx" ON "timer_events" USING btree ("row_version");--> statement-breakpoint
CREATE INDEX "visit_mileage_owner_idx" ON "visit_mileage" USING btree ("owner_id");--> statement-breakpoint
CREATE INDEX "visit_mileage_row_version_idx" ON "visit_mileage" USING btree ("row_version");--> statement-breakpoint
CREATE INDEX "visits_owner_date_idx" ON "visits" USING btree ("owner_id","visit_date","start_time");--> statement-breakpoint
CREATE INDEX "visits_patient_idx" ON "visits" USING btree ("patient_id");--> statement-breakpoint
CREATE INDEX "visits_referral_idx" ON "visits" USING btree ("referral_id");--> statement-breakpoint
CREATE INDEX "visits_row_version_idx" ON "visits" USING btree ("row_version");