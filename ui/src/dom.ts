// Small DOM helpers: elements are built with textContent, never innerHTML, so node
// text (gists, notes, paths) can never become markup.

type Child = Node | string | null | undefined | false;
type Attrs = Record<string, string | number | boolean | null | undefined | ((ev: Event) => void)>;

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: (Child | Child[])[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (typeof v === 'function') {
      el.addEventListener(k.replace(/^on/, '').toLowerCase(), v as EventListener);
    } else if (k === 'class') {
      el.className = String(v);
    } else if (k === 'style') {
      // Through the CSSOM: the page's CSP refuses style attributes set as markup.
      el.style.cssText = String(v);
    } else if (k === 'text') {
      el.textContent = String(v);
    } else if (k === 'value' && 'value' in el) {
      (el as unknown as { value: string }).value = String(v);
    } else if (v === true) {
      el.setAttribute(k, '');
    } else {
      el.setAttribute(k, String(v));
    }
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(typeof c === 'string' ? document.createTextNode(c) : c);
  }
  return el;
}

/** Replace an element's children, skipping the absent ones as `h` does. */
export function fill(el: HTMLElement, ...children: (Child | Child[])[]): void {
  el.replaceChildren(...children.flat().filter((c): c is Node | string => c !== null && c !== undefined && c !== false));
}

export const $ = <T extends HTMLElement = HTMLElement>(id: string): T => {
  const el = document.getElementById(id);
  if (!el) throw new Error(`missing #${id}`);
  return el as T;
};

/**
 * A number as en-US writes it (1,234,567.891: commas, at most three decimals), without
 * `toLocaleString`: its first call loads the locale's number data, about 20 ms on the
 * way to the first picture (the level cards format their budgets then).
 */
export function fmt(n: number): string {
  // The shortest decimal that reads back as `n`, rounded half away from zero, as Intl
  // rounds it (not the binary value: 1.0005 is 1.001).
  const plain = Math.abs(n).toString();
  if (!Number.isFinite(n) || plain.includes('e')) return n.toLocaleString('en-US');
  let [whole, decimals = ''] = plain.split('.');
  if (decimals.length > 3) {
    const rounded = BigInt(whole + decimals.slice(0, 3)) + BigInt(decimals[3] >= '5' ? 1 : 0);
    const digits = rounded.toString().padStart(4, '0');
    whole = digits.slice(0, -3);
    decimals = digits.slice(-3);
  }
  decimals = decimals.replace(/0+$/, '');
  const grouped = whole.replace(/\B(?=(\d{3})+$)/g, ',');
  const sign = n < 0 || Object.is(n, -0) ? '-' : '';
  return `${sign}${grouped}${decimals ? `.${decimals}` : ''}`;
}

/** Characters as the server counts them (Unicode scalar values). */
export const chars = (s: string): number => [...s].length;

export function when(ts: unknown): string {
  if (typeof ts !== 'number' || !ts) return '—';
  const d = new Date(ts * 1000);
  const ago = Date.now() / 1000 - ts;
  let rel: string;
  const abs = Math.abs(ago);
  if (abs < 90) rel = 'just now';
  else if (abs < 5400) rel = `${Math.round(abs / 60)} min`;
  else if (abs < 129600) rel = `${Math.round(abs / 3600)} h`;
  else rel = `${Math.round(abs / 86400)} days`;
  if (abs >= 90) rel = ago >= 0 ? `${rel} ago` : `in ${rel}`;
  return `${d.toLocaleString()} (${rel})`;
}

/** Say something briefly, one message at a time: a newer one replaces the last. */
export function toast(message: string, kind: 'info' | 'error' | 'live' = 'info'): void {
  const box = $('toasts');
  const t = h('div', { class: `toast ${kind}`, text: message });
  box.replaceChildren(t);
  window.setTimeout(() => t.remove(), kind === 'error' ? 7000 : 4000);
}

export const isTyping = (el: EventTarget | null): boolean =>
  el instanceof HTMLElement &&
  (el.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT'].includes(el.tagName));

/** A list field edited one item per line. */
export const lines = (text: string): string[] =>
  text
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);

export const listOf = (v: unknown): string[] =>
  Array.isArray(v) ? v.map((x) => (typeof x === 'string' ? x : JSON.stringify(x))) : typeof v === 'string' ? [v] : [];
