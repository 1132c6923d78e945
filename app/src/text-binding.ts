/**
 * A textarea bound to a Y.Text (one SOAP section of the draft): local typing becomes the
 * smallest insert/delete on the shared text, and remote edits (the clinician's other device)
 * update the textarea while keeping the caret where it was relative to the text around it.
 */
import type * as Y from 'yjs';

/** Marks our own transactions, so the observer skips what the textarea already shows. */
const LOCAL = Symbol('textarea');

/** The change from `before` to `after` as one splice: [index, deleted count, inserted text]. */
export function splice(before: string, after: string): [number, number, string] {
  let start = 0;
  const max = Math.min(before.length, after.length);
  while (start < max && before.charCodeAt(start) === after.charCodeAt(start)) start++;
  let endBefore = before.length;
  let endAfter = after.length;
  while (endBefore > start && endAfter > start && before.charCodeAt(endBefore - 1) === after.charCodeAt(endAfter - 1)) {
    endBefore--;
    endAfter--;
  }
  return [start, endBefore - start, after.slice(start, endAfter)];
}

/** Binds; answers the unbind function. */
export function bindTextarea(area: HTMLTextAreaElement, text: Y.Text, onChange: () => void): () => void {
  let shown = text.toString();
  area.value = shown;
  const onInput = () => {
    const [index, removed, inserted] = splice(shown, area.value);
    shown = area.value;
    text.doc?.transact(() => {
      if (removed > 0) text.delete(index, removed);
      if (inserted) text.insert(index, inserted);
    }, LOCAL);
    onChange();
  };
  const observer = (event: Y.YTextEvent) => {
    if (event.transaction.origin === LOCAL) return;
    const next = text.toString();
    if (next === area.value) {
      shown = next;
      return;
    }
    // Move the caret by what was inserted or deleted before it.
    const caret = area.selectionStart;
    const [index, removed, inserted] = splice(area.value, next);
    const moved = caret > index ? Math.max(index, caret - removed) + inserted.length : caret;
    area.value = next;
    shown = next;
    if (document.activeElement === area) area.setSelectionRange(moved, moved);
    onChange();
  };
  area.addEventListener('input', onInput);
  text.observe(observer);
  return () => {
    area.removeEventListener('input', onInput);
    text.unobserve(observer);
  };
}
