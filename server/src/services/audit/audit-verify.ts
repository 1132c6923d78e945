import { sql } from 'drizzle-orm';
import { rowsOf, type Db } from '../../db/database.ts';

/**
 * Why a link is broken: its row no longer hashes to its stored hash (`altered`), rows before it
 * are gone or it sits out of place (`missing`), its chain's last rows are gone (`truncated`:
 * the head recorded at insert is past the last row).
 */
export type BrokenReason = 'altered' | 'missing' | 'truncated';

export interface BrokenLink {
  readonly chain: string;
  /** The position the chain breaks at (for `truncated`, the head's position). */
  readonly seq: number;
  /** The audit row found at the break; null when the rows there are gone. */
  readonly id: number | null;
  readonly reason: BrokenReason;
}

export interface ChainHead {
  readonly chain: string;
  readonly seq: number;
  readonly hash: string;
}

export interface AuditVerification {
  readonly ok: boolean;
  readonly rowsChecked: number;
  readonly chainsChecked: number;
  /** The first broken link of each broken chain, earliest write first; `[0]` is the first of all. */
  readonly broken: readonly BrokenLink[];
  /**
   * Every chain's last link. Kept outside the database (printed into a ticket, a log shipper),
   * they let a later verify prove that nothing was rewritten from some point to the end.
   */
  readonly heads: readonly ChainHead[];
}

interface LinkRow extends Record<string, unknown> {
  chain: string | null;
  seq: string | number | null;
  id: string | number | null;
  reason: BrokenReason;
}

const num = (v: string | number | null): number | null => (v === null ? null : Number(v));

/**
 * `fieldchart audit verify`: recomputes every chain with the same SQL function the insert
 * trigger uses (migration audit_hash_chain) and compares. One pass over the table, in the
 * database; nothing is written, and the trail is not locked.
 */
export function createAuditVerify(deps: { db: Db }) {
  const { db } = deps;
  return {
    async verify(opts: { chain?: string } = {}): Promise<AuditVerification> {
      const only = opts.chain ?? null;
      const linkRows = await db.execute<LinkRow>(sql`
        WITH links AS (
          SELECT a.id, a.chain, a.chain_seq, a.row_hash,
                 lag(a.chain_seq) OVER w AS prev_seq,
                 audit_chain_link(coalesce(lag(a.row_hash) OVER w, ''), a) AS expected,
                 audit_chain_of(a.organization_id, a.actor_user_id) AS owner_chain
            FROM audit_log a
           WHERE ${only}::text IS NULL OR a.chain = ${only}::text
          WINDOW w AS (PARTITION BY a.chain ORDER BY a.chain_seq)
        ),
        broken AS (
          SELECT DISTINCT ON (chain) chain, chain_seq AS seq, id,
                 CASE WHEN chain_seq IS DISTINCT FROM coalesce(prev_seq, 0) + 1 THEN 'missing' ELSE 'altered' END AS reason
            FROM links
           WHERE row_hash IS DISTINCT FROM expected
              OR chain_seq IS DISTINCT FROM coalesce(prev_seq, 0) + 1
              OR chain IS DISTINCT FROM owner_chain
           ORDER BY chain, chain_seq
        )
        SELECT chain, seq, id, reason FROM broken
        UNION ALL
        -- A head past the last row: the end of the chain was cut off.
        SELECT h.chain, h.seq, NULL, 'truncated'
          FROM audit_chain_heads h
          LEFT JOIN LATERAL (SELECT max(chain_seq) AS last, count(*) AS n FROM audit_log WHERE chain = h.chain) t ON true
         WHERE (${only}::text IS NULL OR h.chain = ${only}::text)
           AND h.seq > 0
           AND (t.last IS NULL OR t.last < h.seq OR NOT EXISTS (SELECT 1 FROM audit_log WHERE chain = h.chain AND chain_seq = h.seq AND row_hash = h.hash))
           AND h.chain NOT IN (SELECT chain FROM broken WHERE chain IS NOT NULL)`);
      const counts = await db.execute<{ rows: string | number; chains: string | number }>(sql`
        SELECT count(*) AS rows, count(DISTINCT chain) AS chains FROM audit_log WHERE ${only}::text IS NULL OR chain = ${only}::text`);
      const heads = await db.execute<{ chain: string; seq: string | number; hash: string }>(sql`
        SELECT chain, seq, hash FROM audit_chain_heads WHERE seq > 0 AND (${only}::text IS NULL OR chain = ${only}::text) ORDER BY chain`);
      const broken = rowsOf<LinkRow>(linkRows)
        .map((r) => ({ chain: r.chain ?? '(none)', seq: num(r.seq) ?? 0, id: num(r.id), reason: r.reason }))
        .sort((a, b) => (a.id ?? Number.MAX_SAFE_INTEGER) - (b.id ?? Number.MAX_SAFE_INTEGER) || a.chain.localeCompare(b.chain));
      const count = rowsOf<{ rows: string | number; chains: string | number }>(counts)[0];
      return {
        ok: broken.length === 0,
        rowsChecked: Number(count?.rows ?? 0),
        chainsChecked: Number(count?.chains ?? 0),
        broken,
        heads: rowsOf<{ chain: string; seq: string | number; hash: string }>(heads).map((h) => ({ chain: h.chain, seq: Number(h.seq), hash: h.hash })),
      };
    },
  };
}

export type AuditVerify = ReturnType<typeof createAuditVerify>;
