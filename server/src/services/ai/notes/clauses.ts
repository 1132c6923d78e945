/**
 * Cuts a dictation into clauses and cleans each one, without ever adding a word: a clause's
 * text is made of the transcript's own tokens (fillers, asides to the patient and corrected
 * values removed), and its span is where those tokens sit in the transcript.
 */
import { isNumberWord } from './number-words.ts';

export interface Token {
  readonly text: string;
  /** lower case, without surrounding punctuation ("Feet," → "feet", "96%" → "96%") */
  readonly norm: string;
  readonly start: number;
  readonly end: number;
  /** whitespace before it holds a line break */
  readonly afterBreak: boolean;
}

export interface Clause {
  /** cleaned text, capitalised and ending with a full stop */
  readonly text: string;
  readonly tokens: readonly Token[];
  readonly char_start: number;
  readonly char_end: number;
}

export function normalizeToken(t: string): string {
  return t.toLowerCase().replace(/^[^a-z0-9]+/, '').replace(/[^a-z0-9%]+$/, '');
}

export function tokenize(text: string): Token[] {
  const out: Token[] = [];
  const re = /\S+/g;
  let prevEnd = 0;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    out.push({
      text: m[0],
      norm: normalizeToken(m[0]),
      start: m.index,
      end: m.index + m[0].length,
      afterBreak: /\n/.test(text.slice(prevEnd, m.index)),
    });
    prevEnd = m.index + m[0].length;
  }
  return out;
}

const ABBREVIATIONS = new Set(['dr', 'mr', 'mrs', 'ms', 'st', 'vs', 'approx', 'e.g', 'i.e', 'etc', 'no', 'pt', 'min', 'max', 'mod']);

function endsSentence(t: Token, next: Token | undefined): boolean {
  if (!/[.!?;]["')\]]?$/.test(t.text)) return false;
  if (/[!?;]/.test(t.text.slice(-2))) return true;
  const bare = t.text.toLowerCase().replace(/\.$/, '').replace(/^[^a-z0-9]+/, '');
  // "pt." or "Dr." in mid-sentence: only a sentence end when a capital follows
  if (ABBREVIATIONS.has(bare)) return next === undefined || /^[A-Z]/.test(next.text);
  return true;
}

/**
 * Phrases that open a new clause. STRONG ones cut any sentence (a report, a plan, an aside);
 * RUN_ON ones only cut run-on speech (a long stretch without punctuation), where a clause
 * head such as "grip strength" or "bowel sounds" is the only sign that a new finding starts.
 * Matched on normalised tokens.
 */
const SUBJECT = '(?:the patient|patient|pt|she|he|they|client|caregiver|her daughter|his daughter|daughter|his wife|her husband|wife|husband|son|her son|his son|family|spouse|aide|mom|dad)';
const NUM_WORD = '(?:\\d|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|a hundred)';
const STRONG: readonly RegExp[] = [
  new RegExp(`^${SUBJECT} (?:reports?|reported|states?|stated|says|said|denies|denied|complains?|complained|c/o|mentions?|mentioned|tells|told|feels|felt|rates?|rated|reporting|stating)\\b`),
  /^(?:plan is|plan to|will (?:continue|follow|see|return|progress|notify|call|monitor|reassess|add|focus|update|schedule|work|discharge|trial|check|review|increase|advance|contact|begin|address|let|recheck|request|bring))\b/,
];
const RUN_ON: readonly RegExp[] = [
  new RegExp(`^${SUBJECT} (?:is|was|has|had|tolerated|ambulated|performed|demonstrated|verbalized|required|requires|needs|needed|continues|remains|will|walked|completed|transferred|did|can|could|would|agrees|agreed|presents|shows|took)\\b`),
  new RegExp(`^(?:vitals?|vital signs|bp|blood pressure|heart rate|hr|pulse|o2 sats?|sats|spo2|oxygen sat\\w*|temp|temperature|respirations|resp rate|rr|weight|blood sugar|blood glucose|fsbs|cbg|fingerstick)(?: [a-z]+){0,2} ${NUM_WORD}`),
  /^(?:and then|then|next|after that|afterwards|also|plus|additionally)\b/,
  /^(?:continue|recommend|next visit|next session|follow up|plan|will)\b/,
  /^(?:assessment|overall|progressing|making (?:good|steady|slow) progress|remains homebound)\b/,
  /^(?:(?:gait|balance|transfer|stair|dressing|caregiver|endurance|strengthening|bed mobility|swallow|swallowing|dysphagia|cognitive|memory|range of motion) (?:training|exercises?|tasks?)|trials? of|ther ex|therex|therapeutic exercises?)\b/,
  /^(?:ambulated|performed|completed|educated|instructed|reviewed|assessed|observed|measured|worked on|practiced|issued|trained|dressing change|oral motor|grip strength|fine motor|word retrieval|picture description|functional phrases|vocal|abdomen|bowel sounds|lungs|lung sounds|breath sounds|wound|sacral|periwound|skin|bruise|incision|edema|mucous membranes|alert and oriented|orthostatic)\b/,
  new RegExp(`^(?:${NUM_WORD}|\\d+) times sit to stand\\b`),
  /^(?:[a-z]+ )?(?:likely|appears|tends to|is improving|is healing|has improved|is progressing|is making|limits|limited by)\b/,
  /^(?:limited|improved|significant improvement|decreased|impaired|good|fair|poor) (?:tolerance|gait|balance|strength|endurance|improvement|carryover|progress|safety|activity|in)\b/,
];

/** What a clinician says to the patient during the visit: never documentation. */
const ASIDE = /^(?:good job|great job|nice job|nice work|good work|well done|you(?:'re| are) doing (?:great|good|well|awesome)|let'?s (?:go|try|do|sit|stand|take|get|see if you)|can you|could you|would you|go ahead|take a (?:deep )?breath|hold on|hold it|one more|keep going|almost there|sit (?:down|back)|stand up|here you go|thank you|thanks|be careful|careful|watch your step|how are you|how(?:'s| is) (?:that|your)|are you (?:ok|okay|alright|all right|ready)|do you (?:need|want)|you can (?:sit|rest|stop)|okay (?:ready|good)|alright (?:ready|good)|that'?s it|perfect|beautiful|there you go|excuse me|bless you|nice|great|perfect)(?:$|[ ,.!?])/;

/** Instructions spoken to the patient mid-visit ("take a sip for me", "I'm going to listen to your lungs"). */
const SPOKEN_TO_PATIENT =
  /^(?:(?:take|stand|sit|hold|try|reach|grab|look|lean|lift|push|pull|breathe|relax|turn|squeeze|scoot|show me|tell me|give me|point to)\b|(?:open|close|keep|put|raise|lower|bend|straighten) your\b|(?:i'm going to|i am going to|i'm gonna|let me|i want you to|i need you to)\b.*\b(?:you|your)\b)/;

const FILLER = new Set(['um', 'umm', 'uh', 'uhh', 'uhm', 'er', 'erm', 'ah', 'hmm', 'mm', 'mhm', 'basically']);
const LEADING_DROP = new Set(['okay', 'ok', 'so', 'and', 'alright', 'well', 'now', 'then', 'also', 'plus', 'but', 'oh', 'yeah', 'right', 'anyway', 'additionally', 'afterwards']);
const TWO_WORD_FILLERS: readonly (readonly [string, string])[] = [
  ['you', 'know'], ['let', 'see'], ['lets', 'see'], ["let's", 'see'], ['all', 'right'], ['and', 'then'], ['after', 'that'],
];
const CORRECTION: readonly (readonly string[])[] = [
  ['scratch', 'that'], ['strike', 'that'], ['correction'], ['no', 'wait'], ['wait', 'no'], ['i', 'mean'], ['sorry'], ['make', 'that'], ['or', 'rather'], ['actually'], ['excuse', 'me'],
];
const REPLACEMENT_LEAD: readonly (readonly string[])[] = [
  ['it', 'was'], ["it's"], ['it', 'is'], ["that's"], ['that', 'was'], ['make', 'it'], ['should', 'be'], ['it', 'should', 'be'], ['was'], ['is'],
];

const isNumeric = (t: Token) => /^\d/.test(t.norm) || isNumberWord(t.norm) && t.norm !== 'a' && t.norm !== 'point';

function startsWithPhrase(tokens: readonly Token[], i: number, phrase: readonly string[]): boolean {
  return phrase.every((w, k) => tokens[i + k]?.norm === w);
}

function phraseAt(tokens: readonly Token[], i: number, phrases: readonly (readonly string[])[]): number {
  for (const p of phrases) if (startsWithPhrase(tokens, i, p)) return p.length;
  return 0;
}

function starterAt(tokens: readonly Token[], i: number, runOn: boolean): boolean {
  const window = tokens.slice(i, i + 6).map((t) => t.norm).join(' ');
  return STRONG.some((re) => re.test(window)) || ASIDE.test(window) || (runOn && RUN_ON.some((re) => re.test(window)));
}

/** Long stretches without punctuation are run-on speech. */
const RUN_ON_TOKENS = 16;

const GLUE = new Set([
  'to', 'of', 'the', 'a', 'an', 'decreased', 'reduced', 'impaired', 'improved', 'increased', 'poor', 'good', 'fair', 'her', 'his', 'their', 'my', 'your', 'says', 'said', 'states', 'stated', 'reports', 'reported', 'that', 'is', 'was', 'were', 'are', 'with', 'for', 'in', 'on', 'at', 'from', 'by', 'about', 'denies', 'than', 'tells', 'told', 'feels', 'because', 'when', 'if', 'after', 'before', 'while', 'since', 'into', 'per', 'as', 'not', 'no',
]);

/** Sentences (punctuation, line breaks), then clauses at run-on boundaries. */
function* splitClauses(tokens: readonly Token[]): Generator<Token[]> {
  const sentences: Token[][] = [];
  let cur: Token[] = [];
  tokens.forEach((t, i) => {
    if (t.afterBreak && cur.length > 0) {
      sentences.push(cur);
      cur = [];
    }
    cur.push(t);
    if (endsSentence(t, tokens[i + 1])) {
      sentences.push(cur);
      cur = [];
    }
  });
  if (cur.length > 0) sentences.push(cur);

  for (const s of sentences) {
    let start = 0;
    const runOn = s.length > RUN_ON_TOKENS && s.filter((t) => /[,;:]$/.test(t.text)).length * 8 < s.length;
    // words that count toward a clause's length, so far (kept incrementally: run-on speech can be thousands of tokens)
    const counts = (t: Token) => !FILLER.has(t.norm) && !LEADING_DROP.has(t.norm);
    let before = s[0] && counts(s[0]) ? 1 : 0;
    for (let i = 1; i < s.length; i += 1, before += counts(s[i - 1]!) ? 1 : 0) {
      const after = s.length - i;
      if (before < 2 || after < 2) continue;
      if (!starterAt(s, i, runOn)) continue;
      const prev = s[i - 1]!;
      // "plan is to | continue", "says | he has": the words before still need what follows
      if (!/[,;:]$/.test(prev.text) && GLUE.has(prev.norm)) continue;
      // "and" / "so" just before a starter, or the side of a body part, belongs to the new clause
      const cut = ['and', 'so', 'then', 'right', 'left', 'bilateral'].includes(prev.norm) && !/[,;]$/.test(s[i - 2]?.text ?? '') ? i - 1 : i;
      if (cut - start < 2) continue;
      yield s.slice(start, cut);
      start = cut;
      before = s.slice(cut, i).filter(counts).length;
    }
    yield s.slice(start);
  }
}

/** Applies spoken corrections: "15 feet, scratch that, 20 feet" keeps 20 feet. */
function applyCorrections(tokens: Token[]): Token[] {
  for (let i = 0; i < tokens.length; i += 1) {
    const len = phraseAt(tokens, i, CORRECTION);
    if (!len) continue;
    const marker = tokens.slice(i, i + len);
    let r = i + len;
    r += phraseAt(tokens, r, REPLACEMENT_LEAD);
    const replacement = tokens.slice(r);
    const before = tokens.slice(0, i);
    // "sorry", "actually", "I mean" are corrections only when a value or a restatement follows
    const weak = ['sorry', 'actually', 'i'].includes(marker[0]!.norm);
    const numStart = replacement.findIndex((t) => !FILLER.has(t.norm));
    if (numStart >= 0 && isNumeric(replacement[numStart]!)) {
      let numEnd = numStart;
      while (numEnd < replacement.length && isNumeric(replacement[numEnd]!)) numEnd += 1;
      const newNum = replacement.slice(numStart, numEnd);
      const unit = replacement[numEnd];
      // the last number in what came before, followed by the same unit when one is given
      let oldEnd = -1;
      for (let k = before.length - 1; k >= 0; k -= 1) {
        if (isNumeric(before[k]!) && (!unit || before[k + 1]?.norm === unit.norm || k + 1 === before.length)) {
          oldEnd = k + 1;
          break;
        }
      }
      if (oldEnd > 0) {
        let oldStart = oldEnd - 1;
        while (oldStart > 0 && isNumeric(before[oldStart - 1]!)) oldStart -= 1;
        const rest = unit && before[oldEnd]?.norm === unit.norm ? before.slice(oldEnd) : before.slice(oldEnd);
        const tailAfterUnit = replacement.slice(unit && before[oldEnd]?.norm === unit.norm ? numEnd + 1 : numEnd);
        const merged = [...before.slice(0, oldStart), ...newNum, ...rest, ...tailAfterUnit];
        return applyCorrections(merged);
      }
      if (weak) continue;
      return applyCorrections(replacement);
    }
    // "HR 72, scratch that, HR 68" / "walked 100 feet, actually the patient walked 80 feet":
    // a restatement replaces from where its opening words were last said
    const content = replacement.filter((t) => !FILLER.has(t.norm));
    const lead = content[0] && ['the', 'a', 'an'].includes(content[0].norm) ? content.slice(1) : content;
    const need = weak ? 2 : 1;
    if (lead.length >= need) {
      for (let k = before.length - need; k >= 0; k -= 1) {
        if (lead.slice(0, need).every((t, n) => before[k + n]?.norm === t.norm)) {
          return applyCorrections([...before.slice(0, k), ...replacement]);
        }
      }
    }
    if (weak) continue;
    // a restated clause replaces what preceded the marker; a bare marker at the end drops it all
    return applyCorrections(replacement);
  }
  return tokens;
}

function strip(tokens: Token[]): Token[] {
  let out = tokens.filter((t) => !FILLER.has(t.norm) && t.norm !== '');
  for (let i = 0; i < out.length - 1; i += 1) {
    if (TWO_WORD_FILLERS.some(([a, b]) => out[i]!.norm === a && out[i + 1]!.norm === b) && (i === 0 || /,$/.test(out[i - 1]!.text) || out[i]!.norm === 'you')) {
      out = [...out.slice(0, i), ...out.slice(i + 2)];
      i -= 1;
    }
  }
  while (out.length > 0 && LEADING_DROP.has(out[0]!.norm)) out = out.slice(1);
  while (out.length > 0 && ['and', 'so', 'but', 'or', 'then', 'um', 'uh', 'with', 'okay', 'ok'].includes(out[out.length - 1]!.norm)) out = out.slice(0, -1);
  return out;
}

function render(tokens: readonly Token[]): string {
  const words = tokens.map((t, i) => {
    let w = t.text;
    if (i === 0) w = w.replace(/^[^A-Za-z0-9]+/, '');
    if (i === tokens.length - 1) w = w.replace(/[.,;:!?]+["')\]]?$/, '');
    return w;
  });
  let s = words.join(' ').replace(/\s+,(?=\s|$)/g, ',').replace(/,+$/, '');
  s = s.trim();
  s = s.charAt(0).toUpperCase() + s.slice(1);
  return /[.!?]$/.test(s) ? s : `${s}.`;
}

export interface ClauseOptions {
  /** keep asides (the evaluation counts them) */
  readonly keepAsides?: boolean;
}

/** The transcript as cleaned clauses, in order. Asides to the patient and empty clauses are left out. */
export function clausesOf(transcript: string): Clause[] {
  const out: Clause[] = [];
  for (const c of clauseStream(transcript)) if (c) out.push(c);
  return out;
}

/**
 * The same clauses, one step per raw clause (null when it was dropped), so an async caller
 * can hand the event loop back between steps on a long transcript.
 */
export function* clauseStream(transcript: string): Generator<Clause | null> {
  for (const raw of splitClauses(tokenize(transcript))) {
    const corrected = applyCorrections(raw.filter((t) => !FILLER.has(t.norm)));
    const cleaned = strip(corrected);
    const key = cleaned.map((t) => t.norm).join(' ');
    if (
      cleaned.length === 0 ||
      // an instruction is an aside when it addresses someone or is a bare command ("stand up")
      ASIDE.test(key) ||
      (SPOKEN_TO_PATIENT.test(key) && (/\b(?:me|you|your)\b/.test(key) || cleaned.length <= 3)) ||
      // a lone word ("okay", "yes", a name) is not documentation
      (cleaned.length < 2 && !/\d/.test(key))
    ) {
      yield null;
      continue;
    }
    // a correction moves a later value forward, so the span is the extent of the kept tokens
    let start = Infinity;
    let end = -Infinity;
    for (const t of cleaned) {
      if (t.start < start) start = t.start;
      if (t.end > end) end = t.end;
    }
    yield { text: render(cleaned), tokens: cleaned, char_start: start, char_end: end };
  }
}
