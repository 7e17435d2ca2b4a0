// A write refused because a text looks like a credential names the finding (never the
// secret). When the person knows it is no secret (a test fixture's password, an
// example key), they can allow that one text here, and the write is tried again.

import { api, ApiError } from './api';
import { h } from './dom';

const FINDING = /\(finding ([0-9a-f]{16})\)/;

/** Show a refusal in `error`; for a credential finding, with a button that allows it
 *  and tries `retry` again. */
export function showRefusal(error: HTMLElement, e: unknown, retry: () => void): void {
  const detail = e instanceof ApiError ? e.detail : String(e);
  const finding = FINDING.exec(detail)?.[1];
  if (!finding) {
    error.textContent = detail;
    return;
  }
  const allow = h('button', { type: 'button', class: 'allow-secret', text: 'It is no secret: allow it and save' });
  allow.addEventListener('click', async () => {
    allow.setAttribute('disabled', '');
    try {
      await api.allowSecret(finding);
      error.textContent = '';
      retry();
    } catch (err) {
      error.textContent = err instanceof ApiError ? err.detail : String(err);
    }
  });
  error.replaceChildren(h('span', { text: detail }), ' ', allow);
}
