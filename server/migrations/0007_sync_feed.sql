CREATE TABLE "draft_updates" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"visit_id" uuid NOT NULL,
	"owner_id" uuid NOT NULL,
	"update_enc" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "sync_clients" (
	"user_id" uuid NOT NULL,
	"client_id" uuid NOT NULL,
	"last_mutation_id" bigint DEFAULT 0 NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "sync_clients_user_id_client_id_pk" PRIMARY KEY("user_id","client_id")
);
--> statement-breakpoint
ALTER TABLE "organizations" ADD COLUMN "txid" "xid8" DEFAULT pg_current_xact_id() NOT NULL;--> statement-breakpoint
ALTER TABLE "patient_referrals" ADD COLUMN "txid" "xid8" DEFAULT pg_current_xact_id() NOT NULL;--> statement-breakpoint
ALTER TABLE "patients" ADD COLUMN "txid" "xid8" DEFAULT pg_current_xact_id() NOT NULL;--> statement-breakpoint
ALTER TABLE "soap_notes" ADD COLUMN "txid" "xid8" DEFAULT pg_current_xact_id() NOT NULL;--> statement-breakpoint
ALTER TABLE "timer_events" ADD COLUMN "txid" "xid8" DEFAULT pg_current_xact_id() NOT NULL;--> statement-breakpoint
ALTER TABLE "visit_mileage" ADD COLUMN "txid" "xid8" DEFAULT pg_current_xact_id() NOT NULL;--> statement-breakpoint
ALTER TABLE "visits" ADD COLUMN "txid" "xid8" DEFAULT pg_current_xact_id() NOT NULL;--> statement-breakpoint
ALTER TABLE "draft_updates" ADD CONSTRAINT "draft_updates_visit_id_visits_id_fk" FOREIGN KEY ("visit_id") REFERENCES "public"."visits"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "draft_updates" ADD CONSTRAINT "draft_updates_owner_id_users_id_fk" FOREIGN KEY ("owner_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "sync_clients" ADD CONSTRAINT "sync_clients_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "draft_updates_visit_idx" ON "draft_updates" USING btree ("visit_id","id");--> statement-breakpoint
CREATE INDEX "patient_referrals_owner_txid_idx" ON "patient_referrals" USING btree ("owner_id","txid");--> statement-breakpoint
CREATE INDEX "patients_owner_txid_idx" ON "patients" USING btree ("owner_id","txid");--> statement-breakpoint
CREATE INDEX "soap_notes_owner_txid_idx" ON "soap_notes" USING btree ("owner_id","txid");--> statement-breakpoint
CREATE INDEX "timer_events_owner_txid_idx" ON "timer_events" USING btree ("owner_id","txid");--> statement-breakpoint
CREATE INDEX "visit_mileage_owner_txid_idx" ON "visit_mileage" USING btree ("owner_id","txid");--> statement-breakpoint
CREATE INDEX "visits_owner_txid_idx" ON "visits" USING btree ("owner_id","txid");