// Live changes over /ws: agents' writes and maintenance moves arrive here. The URL is
// derived from the page's own location; the connection comes back by itself after a
// server restart (backoff up to 5 s), and the caller reloads what it may have missed.

import type { LiveMessage } from './types';

export type LiveStatus = 'connecting' | 'live' | 'reconnecting';

export class Live {
  private ws: WebSocket | null = null;
  private attempt = 0;
  private timer: number | undefined;
  private project: string | null = null;
  private wanted = false;
  /** The KG session the server minted for this connection. */
  session: string | null = null;
  /** The change-log position from which every change comes over this connection. */
  changeHead: number | null = null;

  constructor(
    private readonly onMessage: (m: LiveMessage) => void,
    private readonly onStatus: (s: LiveStatus, reconnected: boolean) => void,
  ) {}

  /** (Re)connect, subscribed to a project's changes when one is on screen. */
  connect(projectPath: string | null): void {
    this.project = projectPath;
    this.wanted = true;
    this.close(false);
    this.open(false);
  }

  private url(): string {
    const scheme = location.protocol === 'https:' ? 'wss' : 'ws';
    const query = this.project ? `?project_path=${encodeURIComponent(this.project)}` : '';
    return `${scheme}://${location.host}/ws${query}`;
  }

  private open(reconnecting: boolean): void {
    this.onStatus(reconnecting ? 'reconnecting' : 'connecting', false);
    let ws: WebSocket;
    try {
      ws = new WebSocket(this.url());
    } catch {
      this.retry();
      return;
    }
    this.ws = ws;
    ws.onmessage = (ev) => {
      if (typeof ev.data !== 'string') return;
      let m: LiveMessage;
      try {
        m = JSON.parse(ev.data) as LiveMessage;
      } catch {
        return;
      }
      if (m.type === 'connected') {
        this.session = m.session_id ?? null;
        this.changeHead = m.change_head;
        const wasRetry = this.attempt > 0 || reconnecting;
        this.attempt = 0;
        this.onStatus('live', wasRetry);
        return;
      }
      this.onMessage(m);
    };
    ws.onclose = () => {
      if (this.ws !== ws) return;
      this.ws = null;
      this.session = null;
      this.changeHead = null;
      if (this.wanted) this.retry();
    };
    ws.onerror = () => ws.close();
  }

  private retry(): void {
    this.onStatus('reconnecting', false);
    const delay = Math.min(5000, 500 * 2 ** this.attempt);
    this.attempt += 1;
    window.clearTimeout(this.timer);
    this.timer = window.setTimeout(() => this.open(true), delay);
  }

  private close(forget: boolean): void {
    window.clearTimeout(this.timer);
    if (forget) this.wanted = false;
    const ws = this.ws;
    this.ws = null;
    if (ws) {
      ws.onclose = null;
      ws.close();
    }
  }
}
