CREATE TABLE "sync_rejections" (
	"user_id" uuid NOT NULL,
	"client_id" uuid NOT NULL,
	"mutation_id" bigint NOT NULL,
	"status" integer NOT NULL,
	"code" text NOT NULL,
	"message" text NOT NULL,
	"errors" jsonb,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "sync_rejections_user_id_client_id_mutation_id_pk" PRIMARY KEY("user_id","client_id","mutation_id")
);
--> statement-breakpoint
ALTER TABLE "sync_rejections" ADD CONSTRAINT "sync_rejections_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "sync_rejections_created_idx" ON "sync_rejections" USING btree ("created_at");