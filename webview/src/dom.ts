// Tiny DOM helpers (no framework: the page is a handful of panels).
export function el<K extends keyof HTMLElementTagNameMap>(tag: K, className?: string, text?: string): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

/** A label/value pair in a definition-like tile. */
export function tile(label: string): { element: HTMLElement; value: HTMLElement; note: HTMLElement } {
  const element = el('div', 'tile');
  const value = el('div', 'tile-value', '–');
  const note = el('div', 'tile-note');
  element.append(el('div', 'tile-label', label), value, note);
  return { element, value, note };
}
