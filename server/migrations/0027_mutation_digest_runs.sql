-- Mutation digests one row per batch instead of one per mutation (schema/src/db/sync.ts
-- `syncMutationDigestRuns`): a device draining 10,000 queued mutations wrote 10,000 digest rows,
-- each with two index entries and a foreign-key check — about a fifteenth of the drain
-- (bench/README.md, sync-reconcile, stop 51). The digests kept so far become runs of one, so a
-- replay of a mutation processed before this migration is still told from another install's.
-- A node of the previous release still writing the old table during a rolling deploy fails its
-- batch, and the device is told to retry it: nothing is lost.
CREATE TABLE "sync_mutation_digest_runs" (
	"user_id" uuid NOT NULL,
	"client_id" uuid NOT NULL,
	"first_mutation_id" bigint NOT NULL,
	"last_mutation_id" bigint NOT NULL,
	"mutation_ids" bigint[] NOT NULL,
	"digests" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "sync_mutation_digest_runs_user_id_client_id_first_mutation_id_pk" PRIMARY KEY("user_id","client_id","first_mutation_id")
);
--> statement-breakpoint
ALTER TABLE "sync_mutation_digest_runs" ADD CONSTRAINT "sync_mutation_digest_runs_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "sync_mutation_digest_runs_created_idx" ON "sync_mutation_digest_runs" USING btree ("created_at");
--> statement-breakpoint
INSERT INTO "sync_mutation_digest_runs" ("user_id", "client_id", "first_mutation_id", "last_mutation_id", "mutation_ids", "digests", "created_at")
SELECT "user_id", "client_id", "mutation_id", "mutation_id", ARRAY["mutation_id"], "digest", "created_at" FROM "sync_mutation_digests";--> statement-breakpoint
DROP TABLE "sync_mutation_digests" CASCADE;
