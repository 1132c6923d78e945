-- `audit_append` (migration 0025) chains a batch in one loop instead of two window passes. It
-- read the entries' jsonb three times (for the heads, their locks and the rows), numbered each
-- chain's rows with one window and hashed them with another, whose step — a SQL function called
-- as an aggregate's transition — goes through the SQL-function executor once per row. Now the
-- chains are read once, the rows once, and each row is placed and hashed in a PL/pgSQL loop (its
-- expressions evaluated inline). 1,000 entries of one chain, median of 24 batches through the
-- driver (`npm run bench -- audit-chain`, two alternating pairs): PostgreSQL 23.2 and 25.5 ms
-- against 25.6 and 27.2 ms, PGlite 41.5 and 39.4 ms against 45.2 and 45.9 ms (bench/README.md,
-- stop 57).
-- The chain is unchanged: the same order, numbers and hashes, each link `audit_chain_link` over
-- the row as it is stored (`audit_row_text`), heads locked in chain order, and rows written
-- with their place and hash only while `fieldchart.audit_appending` is on, as before.
CREATE OR REPLACE FUNCTION audit_append(at timestamptz, entries jsonb) RETURNS integer
  LANGUAGE plpgsql AS $$
DECLARE
  cached text := coalesce(current_setting('fieldchart.audit_head', true), '');
  chains text[];
  -- Each chain's position and hash as the loop extends it: chain -> [seq, hash].
  heads jsonb := '{}';
  head audit_chain_heads%ROWTYPE;
  e record;
  cur_chain text;
  cur_seq bigint;
  cur_hash text;
  -- The rows as they will be stored, in the entries' order. Built whole by ROW(…) (assigning a
  -- row variable's fields one by one cost more than the loop saves); a column added to audit_log
  -- makes the cast fail loudly until this lists it.
  placed audit_log[] := '{}';
  n integer := 0;
  appended integer;
BEGIN
  IF cached <> '' AND split_part(cached, '|', 4) = 'd' THEN
    PERFORM audit_head_write(cached);
  END IF;
  PERFORM set_config('fieldchart.audit_head', '', true);
  SELECT array_agg(DISTINCT audit_chain_of(x.organization_id, x.actor_user_id) ORDER BY audit_chain_of(x.organization_id, x.actor_user_id))
    INTO chains
    FROM jsonb_to_recordset(entries) AS x(actor_user_id uuid, organization_id uuid);
  IF chains IS NULL THEN
    RETURN 0;
  END IF;
  INSERT INTO audit_chain_heads (chain, seq, hash) SELECT c, 0, '' FROM unnest(chains) AS c ORDER BY c ON CONFLICT (chain) DO NOTHING;
  FOR head IN SELECT * FROM audit_chain_heads h WHERE h.chain = ANY (chains) ORDER BY h.chain FOR UPDATE LOOP
    heads := heads || jsonb_build_object(head.chain, jsonb_build_array(head.seq, head.hash));
  END LOOP;
  -- In array order; consecutive entries of one chain (the usual batch: one clinician's) carry
  -- their chain's place in cur_seq and cur_hash and touch `heads` only when the chain changes.
  FOR e IN SELECT * FROM jsonb_to_recordset(entries) AS x(actor_user_id uuid, organization_id uuid, action text, resource_type text,
             resource_id text, outcome text, request_id text, details jsonb) LOOP
    IF n = 0 OR cur_chain IS DISTINCT FROM audit_chain_of(e.organization_id, e.actor_user_id) THEN
      IF n > 0 THEN
        heads := heads || jsonb_build_object(cur_chain, jsonb_build_array(cur_seq, cur_hash));
      END IF;
      cur_chain := audit_chain_of(e.organization_id, e.actor_user_id);
      cur_seq := (heads -> cur_chain ->> 0)::bigint;
      cur_hash := heads -> cur_chain ->> 1;
    END IF;
    n := n + 1;
    cur_seq := cur_seq + 1;
    placed[n] := ROW(nextval('audit_log_id_seq'), at, e.actor_user_id, e.organization_id, e.action, e.resource_type, e.resource_id,
      e.outcome, e.request_id, coalesce(e.details, '{}'::jsonb), cur_chain, cur_seq, NULL)::audit_log;
    -- The link over the previous row's hash, as the trigger and verify make it.
    cur_hash := audit_chain_link(cur_hash, placed[n]);
    placed[n].row_hash := cur_hash;
  END LOOP;
  heads := heads || jsonb_build_object(cur_chain, jsonb_build_array(cur_seq, cur_hash));
  PERFORM set_config('fieldchart.audit_appending', 'on', true);
  INSERT INTO audit_log (id, at, actor_user_id, organization_id, action, resource_type, resource_id, outcome, request_id, details, chain, chain_seq, row_hash)
    SELECT p.id, p.at, p.actor_user_id, p.organization_id, p.action, p.resource_type, p.resource_id, p.outcome, p.request_id, p.details,
           p.chain, p.chain_seq, p.row_hash
      FROM unnest(placed) WITH ORDINALITY AS p
     ORDER BY p.ordinality;
  GET DIAGNOSTICS appended = ROW_COUNT;
  UPDATE audit_chain_heads h SET seq = (heads -> h.chain ->> 0)::bigint, hash = heads -> h.chain ->> 1 WHERE h.chain = ANY (chains);
  PERFORM set_config('fieldchart.audit_appending', 'off', true);
  RETURN appended;
END
$$;
