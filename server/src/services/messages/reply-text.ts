/**
 * The new text of an emailed reply: the quoted history and the signature mail clients add
 * are cut, so a conversation shows what the patient wrote, once. A pure rule (no I/O).
 *
 * Cut at the first line that starts quoted history or a signature:
 * - an attribution: "On <date>, <name> wrote:" (also wrapped over two lines), "Le … a écrit :",
 *   "Am … schrieb …:", "El … escribió:";
 * - Outlook: "-----Original Message-----", a "________________" rule, or a header block
 *   ("From:" followed within a few lines by "Sent:"/"Date:" and "To:"/"Subject:");
 * - a run of "> " quoted lines that continues to the end (inline answers between quotes keep
 *   the quoted lines they answer out, and the answers in);
 * - a signature: the standard delimiter "-- " (RFC 3676), or a mobile footer such as
 *   "Sent from my iPhone" / "Get Outlook for iOS".
 */

const ATTRIBUTION = [
  /^\s*On\b.{0,300}\bwrote:\s*$/i,
  /^\s*Le\b.{0,300}\ba écrit\s?:\s*$/i,
  /^\s*Am\b.{0,300}\bschrieb\b.{0,100}:\s*$/i,
  /^\s*El\b.{0,300}\bescribió:\s*$/i,
];
const ORIGINAL = /^\s*-{2,}\s*(Original Message|Forwarded message)\s*-{2,}\s*$/i;
const RULE = /^\s*_{10,}\s*$/;
const SIGNATURE_DELIMITER = /^--\s?$/;
const MOBILE_FOOTER = /^\s*(Sent from my \w[\w ]*|Sent from (Mail|Outlook|Yahoo Mail) for \w+|Get Outlook for \w+|Sent from my (iPhone|iPad|Android|phone|mobile device|Samsung)[\w .-]*)\s*$/i;
const HEADER = (name: string) => new RegExp(`^\\s*\\*?${name}:\\*?\\s`, 'i');

function isOutlookHeaderBlock(lines: readonly string[], i: number): boolean {
  if (!HEADER('From').test(lines[i] ?? '')) return false;
  const next = lines.slice(i + 1, i + 6);
  return next.some((l) => HEADER('(Sent|Date)').test(l)) && next.some((l) => HEADER('(To|Subject)').test(l));
}

function isAttribution(lines: readonly string[], i: number): boolean {
  const line = lines[i] ?? '';
  if (ATTRIBUTION.some((re) => re.test(line))) return true;
  // Clients wrap a long attribution: "On Mon, 3 Mar 2026 at 09:12, Dr Smith <reply+…" / "…> wrote:".
  const joined = `${line} ${lines[i + 1] ?? ''}`;
  return /^\s*On\b/i.test(line) && ATTRIBUTION.some((re) => re.test(joined));
}

/** The reply without quoted history and signature, trimmed; '' when nothing new remains. */
export function stripQuotedReply(text: string): string {
  const lines = text.replace(/\r\n?/g, '\n').split('\n');
  let end = lines.length;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? '';
    if (
      isAttribution(lines, i) ||
      ORIGINAL.test(line) ||
      RULE.test(line) ||
      isOutlookHeaderBlock(lines, i) ||
      SIGNATURE_DELIMITER.test(line) ||
      MOBILE_FOOTER.test(line)
    ) {
      end = i;
      break;
    }
  }
  // Quoted lines ("> …") are the history wherever they are; blank lines around them collapse.
  const kept = lines.slice(0, end).filter((l) => !/^\s*>/.test(l));
  return kept
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}
