/**
 * Spoken numbers to digits, for reading vital signs ("one thirty two over eighty",
 * "ninety eight point six"). Only used to read values; note text keeps the words the
 * clinician said.
 */
const ONES: Record<string, number> = {
  zero: 0, oh: 0, one: 1, two: 2, three: 3, four: 4, five: 5, six: 6, seven: 7, eight: 8, nine: 9,
};
const TEENS: Record<string, number> = {
  ten: 10, eleven: 11, twelve: 12, thirteen: 13, fourteen: 14, fifteen: 15, sixteen: 16, seventeen: 17, eighteen: 18, nineteen: 19,
};
const TENS: Record<string, number> = {
  twenty: 20, thirty: 30, forty: 40, fourty: 40, fifty: 50, sixty: 60, seventy: 70, eighty: 80, ninety: 90,
};

export function isNumberWord(w: string): boolean {
  const k = w.toLowerCase();
  return k in ONES || k in TEENS || k in TENS || k === 'hundred' || k === 'point' || k === 'a';
}

/** A value below 100 spoken as one to three words ("seventy two", "twelve", "five"); null otherwise. */
function smallNumber(words: readonly string[]): number | null {
  if (words.length === 1) {
    const w = words[0]!;
    return ONES[w] ?? TEENS[w] ?? TENS[w] ?? null;
  }
  if (words.length === 2 && words[0]! in TENS && words[1]! in ONES && words[1] !== 'oh' && words[1] !== 'zero') {
    return TENS[words[0]!]! + ONES[words[1]!]!;
  }
  return null;
}

/** Parses one run of number words; null when it is not a number as spoken in a vital sign. */
export function parseNumberWords(run: readonly string[]): number | null {
  const words = run.map((w) => w.toLowerCase()).filter((w) => w !== 'and');
  if (words.length === 0) return null;
  const point = words.indexOf('point');
  if (point >= 0) {
    const whole = parseNumberWords(words.slice(0, point));
    const frac = words.slice(point + 1).map((w) => ONES[w]);
    if (whole === null || frac.length === 0 || frac.some((d) => d === undefined)) return null;
    return Number(`${whole}.${frac.join('')}`);
  }
  const h = words.indexOf('hundred');
  if (h >= 0) {
    const lead = h === 0 || (h === 1 && words[0] === 'a') ? 1 : smallNumber(words.slice(0, h));
    if (lead === null) return null;
    const rest = words.slice(h + 1);
    if (rest.length === 0) return lead * 100;
    const tail = smallNumber(rest);
    return tail === null ? null : lead * 100 + tail;
  }
  const whole = smallNumber(words);
  if (whole !== null) return whole;
  // Spoken hundreds without the word: "one thirty two" = 132, "one oh five" = 105, "two ten" = 210.
  const head = ONES[words[0]!];
  if (head !== undefined && head > 0 && words.length >= 2) {
    const rest = words.slice(1);
    if (rest[0] === 'oh' && rest.length === 2 && ONES[rest[1]!] !== undefined) return head * 100 + ONES[rest[1]!]!;
    const tail = smallNumber(rest);
    if (tail !== null && tail >= 10) return head * 100 + tail;
  }
  return null;
}

/**
 * The text with every run of number words replaced by digits ("one thirty two over eighty"
 * → "132 over 80"). Runs that do not parse are left as they are.
 */
export function digitsFromWords(text: string): string {
  const tokens = text.split(/(\s+|[,;:!?]|\.(?!\d))/);
  const out: string[] = [];
  let run: string[] = [];
  let runRaw: string[] = [];
  const flush = () => {
    // "about a four": the article is not part of the number (but "a hundred" is)
    if (run.length > 1 && run[0] === 'a' && run[1] !== 'hundred') {
      out.push(...runRaw.slice(0, 2));
      run = run.slice(1);
      runRaw = runRaw.slice(2);
    }
    if (run.length > 0) {
      // "a" alone (the article) is never a number.
      const value = run.length === 1 && run[0] === 'a' ? null : parseNumberWords(run);
      if (value === null) out.push(...runRaw);
      else {
        out.push(String(value));
        // keep the whitespace that followed the run
        const last = runRaw[runRaw.length - 1];
        if (last !== undefined && /^\s+$/.test(last)) out.push(last);
      }
    }
    run = [];
    runRaw = [];
  };
  for (const t of tokens) {
    if (t === '') continue;
    if (/^\s+$/.test(t)) {
      if (run.length > 0) runRaw.push(t);
      else out.push(t);
      continue;
    }
    const w = t.toLowerCase().replace(/[^a-z]/g, '');
    const pure = /^[a-z-]+$/i.test(t);
    const parts = w.length > 0 && pure ? t.toLowerCase().split('-') : [];
    // A run never starts with "point" ("point of care").
    if (parts.length > 0 && parts.every((p) => isNumberWord(p)) && !(run.length === 0 && w === 'point')) {
      run.push(...parts);
      runRaw.push(t);
    } else {
      flush();
      out.push(t);
    }
  }
  flush();
  return out.join('').replace(/\s+$/, (m) => (text.endsWith(m) ? m : ''));
}
