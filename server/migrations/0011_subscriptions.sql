CREATE TABLE "store_notifications" (
	"platform" text NOT NULL,
	"notification_id" text NOT NULL,
	"kind" text NOT NULL,
	"received_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "store_purchases" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"user_id" uuid NOT NULL,
	"platform" text NOT NULL,
	"store_key" text NOT NULL,
	"product_id" text NOT NULL,
	"environment" text NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"revoked_at" timestamp with time zone,
	"store_state_at" timestamp with time zone NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "store_purchases" ADD CONSTRAINT "store_purchases_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "store_notifications_key" ON "store_notifications" USING btree ("platform","notification_id");--> statement-breakpoint
CREATE UNIQUE INDEX "store_purchases_store_key" ON "store_purchases" USING btree ("platform","store_key");--> statement-breakpoint
CREATE INDEX "store_purchases_user_idx" ON "store_purchases" USING btree ("user_id");--> statement-breakpoint
ALTER TABLE "users" DROP COLUMN "subscription_status";--> statement-breakpoint
ALTER TABLE "users" DROP COLUMN "subscription_expires_at";--> statement-breakpoint
ALTER TABLE "users" DROP COLUMN "product_id";--> statement-breakpoint
ALTER TABLE "users" DROP COLUMN "platform";