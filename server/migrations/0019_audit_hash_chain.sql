CREATE TABLE "audit_chain_heads" (
	"chain" text PRIMARY KEY NOT NULL,
	"seq" bigint NOT NULL,
	"hash" text NOT NULL
);
--> statement-breakpoint
ALTER TABLE "audit_log" ADD COLUMN "chain" text;--> statement-breakpoint
ALTER TABLE "audit_log" ADD COLUMN "chain_seq" bigint;--> statement-breakpoint
ALTER TABLE "audit_log" ADD COLUMN "row_hash" text;--> statement-breakpoint
CREATE UNIQUE INDEX "audit_log_chain_seq_idx" ON "audit_log" USING btree ("chain","chain_seq");--> statement-breakpoint
-- The audit trail as hash chains, one per actor (docs/operations.md#tamper-evident-audit-log).
-- Computed here, in the database, so every writer (a request, a job, the CLI, a batched insert)
-- extends the chain the same way in the same statement, on PostgreSQL and PGlite alike.
CREATE FUNCTION audit_chain_of(organization_id uuid, actor_user_id uuid) RETURNS text
  LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE
    WHEN actor_user_id IS NOT NULL THEN 'user:' || actor_user_id::text
    WHEN organization_id IS NOT NULL THEN 'org:' || organization_id::text
    ELSE 'system'
  END
$$;
--> statement-breakpoint
-- Every column of a row, chain position included, as one canonical text: jsonb's output is
-- deterministic (keys sorted, whitespace fixed) and the time is whole microseconds since the
-- epoch, so the text does not depend on the session's time zone or date style.
CREATE FUNCTION audit_row_text(r audit_log) RETURNS text
  LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_array(
    r.id, r.chain, r.chain_seq, (extract(epoch FROM r.at) * 1000000)::bigint, r.actor_user_id, r.organization_id,
    r.action, r.resource_type, r.resource_id, r.outcome, r.request_id, r.details
  )::text
$$;
--> statement-breakpoint
CREATE FUNCTION audit_chain_link(prev_hash text, r audit_log) RETURNS text
  LANGUAGE sql STABLE AS $$
  SELECT encode(sha256(convert_to(prev_hash || audit_row_text(r), 'UTF8')), 'hex')
$$;
--> statement-breakpoint
CREATE FUNCTION audit_log_chain() RETURNS trigger
  LANGUAGE plpgsql AS $$
DECLARE
  head audit_chain_heads%ROWTYPE;
BEGIN
  NEW.chain := audit_chain_of(NEW.organization_id, NEW.actor_user_id);
  -- The head's row lock is held to the end of the transaction: a concurrent writer of the same
  -- chain waits here and then reads the committed head, so the chain never forks.
  SELECT * INTO head FROM audit_chain_heads WHERE chain = NEW.chain FOR UPDATE;
  IF NOT FOUND THEN
    INSERT INTO audit_chain_heads (chain, seq, hash) VALUES (NEW.chain, 0, '') ON CONFLICT (chain) DO NOTHING;
    SELECT * INTO head FROM audit_chain_heads WHERE chain = NEW.chain FOR UPDATE;
  END IF;
  NEW.chain_seq := head.seq + 1;
  NEW.row_hash := audit_chain_link(head.hash, NEW);
  UPDATE audit_chain_heads SET seq = NEW.chain_seq, hash = NEW.row_hash WHERE chain = NEW.chain;
  RETURN NEW;
END
$$;
--> statement-breakpoint
-- Rows written before this migration join their chains in id order.
DO $$
DECLARE
  r audit_log%ROWTYPE;
  head audit_chain_heads%ROWTYPE;
BEGIN
  FOR r IN SELECT * FROM audit_log ORDER BY id LOOP
    r.chain := audit_chain_of(r.organization_id, r.actor_user_id);
    SELECT * INTO head FROM audit_chain_heads WHERE chain = r.chain;
    IF NOT FOUND THEN
      head.seq := 0;
      head.hash := '';
    END IF;
    r.chain_seq := head.seq + 1;
    r.row_hash := audit_chain_link(head.hash, r);
    UPDATE audit_log SET chain = r.chain, chain_seq = r.chain_seq, row_hash = r.row_hash WHERE id = r.id;
    INSERT INTO audit_chain_heads (chain, seq, hash) VALUES (r.chain, r.chain_seq, r.row_hash)
      ON CONFLICT (chain) DO UPDATE SET seq = excluded.seq, hash = excluded.hash;
  END LOOP;
END
$$;
--> statement-breakpoint
CREATE TRIGGER audit_log_chain BEFORE INSERT ON audit_log FOR EACH ROW EXECUTE FUNCTION audit_log_chain();
--> statement-breakpoint
-- The trail is append-only for the application; changing it takes the table owner disabling
-- this trigger, and `fieldchart audit verify` then finds the change.
CREATE FUNCTION audit_log_append_only() RETURNS trigger
  LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'audit_log is append-only' USING ERRCODE = 'insufficient_privilege';
END
$$;
--> statement-breakpoint
CREATE TRIGGER audit_log_append_only BEFORE UPDATE OR DELETE ON audit_log FOR EACH ROW EXECUTE FUNCTION audit_log_append_only();
