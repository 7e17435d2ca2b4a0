// The server's REST API, same origin only (the page is served by kg-server at /ui).

import type {
  ActivityAnswer,
  EdgeDeleteAnswer,
  EdgePutAnswer,
  GraphList,
  LevelData,
  LevelName,
  NeighbourhoodAnswer,
  RecallAnswer,
  SearchAnswer,
  StepAction,
  StepAnswer,
  StepBody,
  SyncAnswer,
  SyncNowAnswer,
  UndoAnswer,
  UndoBody,
} from './types';

// Bodies the page sends and sync's answers, generated from the server's types like
// every other payload; re-exported for the modules that import them from here.
export type { StepAction, SyncAnswer, SyncNowAnswer, SyncRepo } from './types';

/** A refused request, with the server's own message (and its whole answer: a
 * refused stale write carries the node as it stands). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly detail: string,
    readonly data: unknown = null,
  ) {
    super(detail);
  }
}

function detailOf(data: unknown, text: string, status: number): string {
  if (data && typeof data === 'object' && 'detail' in data) {
    const d = (data as { detail: unknown }).detail;
    if (typeof d === 'string') return d;
    if (Array.isArray(d)) {
      return d
        .map((p) => {
          const loc = Array.isArray(p?.loc) ? p.loc.slice(1).join('.') : '';
          return loc ? `${loc}: ${p?.msg}` : String(p?.msg ?? p);
        })
        .join('; ');
    }
  }
  return text.trim() || `HTTP ${status}`;
}

async function request<T>(method: string, url: string, body?: unknown): Promise<T> {
  let res: Response;
  try {
    res = await fetch(url, {
      method,
      headers: body === undefined ? {} : { 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: 'no-store',
    });
  } catch {
    throw new ApiError(0, 'The memory server does not answer (is `kg-memory serve` running?)');
  }
  const text = await res.text();
  let data: unknown = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!res.ok) throw new ApiError(res.status, detailOf(data, text, res.status), data);
  return data as T;
}

const q = (params: Record<string, string | null | undefined>): string => {
  const s = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v) s.set(k, v);
  const text = s.toString();
  return text ? `?${text}` : '';
};

/** Where a write goes: the level, the project on screen, the view's live session. */
export interface Address {
  level: LevelName;
  projectPath: string | null;
  session: string | null;
}

const addressing = (a: Address) => ({
  project_path: a.level === 'project' ? (a.projectPath ?? undefined) : undefined,
  session_id: a.session ?? undefined,
});

export const api = {
  health: () => request<{ status: string; version: string }>('GET', '/api/health'),
  graphs: () => request<GraphList>('GET', '/api/view/graphs'),
  level: (level: LevelName, projectPath: string | null) =>
    request<LevelData>('GET', `/api/view/level${q({ level, project_path: level === 'project' ? projectPath : null })}`),
  neighbourhood: (level: LevelName, projectPath: string | null, id: string, k: number) =>
    request<NeighbourhoodAnswer>(
      'GET',
      `/api/view/neighbourhood${q({ level, project_path: level === 'project' ? projectPath : null, id, k: String(k) })}`,
    ),
  search: (query: string, levels: LevelName[], projectPath: string | null) =>
    request<SearchAnswer>(
      'GET',
      `/api/view/search${q({ q: query, levels: levels.join(','), project_path: projectPath })}`,
    ),
  sync: () => request<SyncAnswer>('GET', '/api/sync'),
  /** Commit, fetch, merge and push now; refused with the reason (502, 409) otherwise. */
  syncNow: () => request<SyncNowAnswer>('POST', '/api/sync/now', {}),
  /** A person says the text behind a credential refusal is no secret (see secrets.ts). */
  allowSecret: (finding: string) => request<{ allowed: string }>('POST', '/api/secrets/allow', { finding }),
  /** Why the memory spoke or stayed silent, for the project on screen. */
  recall: (projectPath: string | null) => request<RecallAnswer>('GET', `/api/view/recall${q({ project_path: projectPath })}`),
  activity: (levels: LevelName[], projectPath: string | null) =>
    request<ActivityAnswer>('GET', `/api/view/activity${q({ levels: levels.join(','), project_path: projectPath })}`),
  /** A step: previewed (`dryRun`, nothing changes) or done, and then undoable. */
  step: (a: Address, actions: StepAction[], dryRun: boolean) =>
    request<StepAnswer>('POST', '/api/view/step', {
      level: a.level,
      actions,
      dry_run: dryRun,
      ...addressing(a),
    } satisfies StepBody),
  undo: (a: Address) =>
    request<UndoAnswer>('POST', '/api/view/undo', {
      level: a.level,
      project_path: addressing(a).project_path,
    } satisfies UndoBody),
  putEdge: (a: Address, from: string, to: string, rel: string, notes: string[] | undefined) =>
    request<EdgePutAnswer>('POST', '/api/edges', {
      level: a.level,
      from,
      to,
      rel,
      notes,
      ...addressing(a),
    }),
  deleteEdge: (a: Address, e: { from: string; to: string; rel: string }) =>
    request<EdgeDeleteAnswer>(
      'DELETE',
      `/api/edges/${a.level}/${encodeURIComponent(e.from)}/${encodeURIComponent(e.to)}/${encodeURIComponent(e.rel)}${q(addressing(a))}`,
    ),
};
