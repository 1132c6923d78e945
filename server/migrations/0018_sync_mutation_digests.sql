CREATE TABLE "sync_mutation_digests" (
	"user_id" uuid NOT NULL,
	"client_id" uuid NOT NULL,
	"mutation_id" bigint NOT NULL,
	"digest" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "sync_mutation_digests_user_id_client_id_mutation_id_pk" PRIMARY KEY("user_id","client_id","mutation_id")
);
--> statement-breakpoint
ALTER TABLE "sync_mutation_digests" ADD CONSTRAINT "sync_mutation_digests_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "sync_mutation_digests_created_idx" ON "sync_mutation_digests" USING btree ("created_at");