CREATE TABLE "sync_client_sessions" (
	"user_id" uuid NOT NULL,
	"client_id" uuid NOT NULL,
	"session_id" uuid NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "sync_client_sessions_user_id_client_id_session_id_pk" PRIMARY KEY("user_id","client_id","session_id")
);
--> statement-breakpoint
ALTER TABLE "sync_client_sessions" ADD CONSTRAINT "sync_client_sessions_session_id_sessions_id_fk" FOREIGN KEY ("session_id") REFERENCES "public"."sessions"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "sync_client_sessions" ADD CONSTRAINT "sync_client_sessions_user_id_client_id_sync_clients_user_id_client_id_fk" FOREIGN KEY ("user_id","client_id") REFERENCES "public"."sync_clients"("user_id","client_id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "sync_client_sessions_session_idx" ON "sync_client_sessions" USING btree ("session_id");