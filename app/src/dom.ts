/** A few DOM helpers: the app is plain DOM, so element creation is kept short and typed. */

type Attrs = Record<string, string | number | boolean | null | undefined>;
type Child = Node | string | null | undefined | false;

/**
 * `h('button', { type: 'button', 'aria-label': 'Arrive' }, 'Arrive')`. Attribute values that
 * are `false`, `null` or `undefined` are left out; `true` sets an empty attribute.
 */
export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Attrs = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === false || value === null || value === undefined) continue;
    el.setAttribute(name, value === true ? '' : String(value));
  }
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child);
  }
  return el;
}

/** Replaces everything inside `parent`. */
export function replace(parent: Element, ...children: Child[]): void {
  parent.replaceChildren(...children.filter((c): c is Node | string => c !== null && c !== undefined && c !== false));
}

/** Runs `fn` at most once per `ms`, after the last call (coalesces bursts of sync events). */
export function debounce(fn: () => void, ms: number): () => void {
  let timer: ReturnType<typeof setTimeout> | null = null;
  return () => {
    if (timer !== null) clearTimeout(timer);
    timer = setTimeout(() => {
      timer = null;
      fn();
    }, ms);
  };
}

/** A message a thrown value can show: never a stack, never raw server text beyond its message. */
export function messageOf(err: unknown): string {
  if (err instanceof Error && err.message) return err.message;
  return 'Something went wrong';
}
