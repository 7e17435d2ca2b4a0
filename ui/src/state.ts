// Everything the view remembers between events, in one object; nothing else keeps
// mutable state at module level. Any module reads any slice; each slice is written
// only by the module its `@owner` names, which exposes the updates the others need
// (ui/scripts/structure.mjs fails on a write from anywhere else).

import type { LiveStatus } from './live';
import type { Picture } from './picture';
import type { SyncAnswer } from './api';
import type { ActivityEntry, GraphRow, LevelData, LevelName, RecallEntry, SearchHit, TierName } from './types';

/** A column of the list view, each sortable. */
export type ListColumn = 'id' | 'gist' | 'tier' | 'score' | 'read' | 'useful' | 'size' | 'level';

/** The level whose steps this page can take back (Ctrl+Z or the Undo button), newest
 * first on the server, which keeps up to 20 per level. */
export interface Undoable {
  level: LevelName;
  projectPath: string | null;
  steps: number;
  /** The picture before each of those steps this page made, oldest first: an undo puts
   * the last one back. */
  pictures: Picture[];
}

/** The node panel's edit, as typed (dirty once it differs from the node). */
export interface PanelDraft {
  key: string;
  /** The node's `_written.ts` when the edit began (0: none): a save built on it is
   * refused when someone wrote the node since. */
  writtenTs: number;
  gist: string;
  notes: string;
  touches: string;
  dirty: boolean;
}

export const state = {
  /** The graph list (the picker's). @owner load.ts */
  graphs: [] as GraphRow[],
  /** The project on screen (its recorded path), or null for the user graph alone. @owner load.ts */
  project: null as string | null,
  /** Both levels on screen. @owner load.ts */
  both: false,
  /** The project of the session used last, as the server says (the view opens on it). @owner load.ts */
  recentProject: null as string | null,
  /** The levels on screen, as last read. @owner load.ts */
  levels: {} as Partial<Record<LevelName, LevelData>>,
  /** The node the panel shows. @owner panel.ts */
  picked: null as string | null,
  /** The nodes chosen for a bulk action (shift-click, a box, the list's check boxes). @owner bulk.ts */
  chosen: new Set<string>(),
  /** What the canvas area shows: the graph or the list of nodes. @owner list.ts */
  view: 'graph' as 'graph' | 'list',
  /** The steps this page can take back. @owner moves.ts */
  undo: null as Undoable | null,
  /** The neighbourhood on screen: its centre and hops, or null for the whole graph. @owner neighbourhood.ts */
  around: null as { key: string; k: number } | null,
  /** When this page last made a step (the live echo of its own step is not announced). @owner moves.ts */
  ownMoveAt: 0,
  /** The live connection's status. @owner updates.ts */
  liveStatus: 'connecting' as LiveStatus,
  /** The levels on screen were drawn once (a switch of graph clears it). @owner load.ts */
  loaded: false,
  /** The change-log position the levels on screen were read at (the oldest of them). @owner load.ts */
  levelsHead: null as number | null,

  /** Loading: the refresh under way, and the live changes waiting to be shown. @owner load.ts */
  refresh: {
    running: null as Promise<void> | null,
    pendingFlash: new Set<string>(),
    timer: undefined as number | undefined,
    /** The graph list (selector) reload waiting for a burst of changes to end. */
    graphsTimer: undefined as number | undefined,
  },

  /** A burst of writes on a level, gathered from the live messages (each write's
   * re-balance says only what it moved): the nodes written, those linked, and those
   * maintenance orphaned, for the box that explains it and offers to bring them back.
   * @owner updates.ts */
  burst: null as { level: LevelName; written: Set<string>; linked: Set<string>; orphaned: Set<string>; at: number } | null,

  /** Characters an unsaved edit would add to a level, drawn on its budget gauge. @owner gauges.ts */
  projected: {} as Partial<Record<LevelName, number>>,

  /** The node panel: its unsaved edit, and what it last drew (to leave it alone when
   * unchanged). @owner panel.ts */
  panel: {
    draft: null as PanelDraft | null,
    sig: '',
    /** The dry run of the draft's save: pending, and which request is the latest. */
    previewTimer: undefined as number | undefined,
    previewSeq: 0,
  },

  /** The search box. @owner search.ts */
  search: {
    timer: undefined as number | undefined,
    hits: [] as SearchHit[],
    /** The query `hits` answer. */
    hitsQuery: '',
    active: -1,
    /** Bumped by every search and every dismissal: an answer that arrives for an older
     * generation (the user already chose a hit or closed the list) is dropped. */
    generation: 0,
  },

  /** The list view: its sort and its filters. @owner list.ts */
  list: {
    sort: 'score' as ListColumn,
    descending: true,
    text: '',
    tier: 'all' as TierName | 'all',
  },

  /** The activity panel: open or not, its filters, and the changes it last read. @owner activity.ts */
  activity: {
    open: false,
    /** Which tab: the graphs' changes, or why memory spoke (recall decisions). */
    tab: 'changes' as 'changes' | 'recall',
    level: 'all' as LevelName | 'all',
    kind: 'all' as string,
    timer: undefined as number | undefined,
    entries: [] as ActivityEntry[],
    error: '',
  },

  /** The activity panel's "why memory spoke" tab: the decisions it last read. @owner recalls.ts */
  recalls: {
    decisions: [] as RecallEntry[],
    error: '',
    timer: undefined as number | undefined,
  },

  /** The storage root's sync as the top bar shows it. @owner syncstatus.ts */
  sync: {
    last: null as SyncAnswer | null,
    /** A "Sync now" from this page is running. */
    running: false,
    settle: undefined as number | undefined,
  },

  /** Timings for the test and benchmark hook (`window.kgView.metrics`). @owner load.ts */
  metrics: { firstDrawMs: 0, layoutMs: 0, fetchMs: 0, nodes: 0, edges: 0 },
};

/** The levels on screen. */
export const onScreen = (): LevelName[] => (state.project ? (state.both ? ['user', 'project'] : ['project']) : ['user']);

/** The path of the project level on screen, or null when only the user level shows. */
export const projectOnScreen = (): string | null =>
  onScreen().includes('project') ? (state.levels.project?.project_path ?? null) : null;
