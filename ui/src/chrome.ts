// The page around the graph: the graph selector and "both levels", the toolbar, the
// theme, the URL's hash, and the keyboard shortcuts.

import { toggleActivity } from './activity';
import { graph, live } from './app';
import { clearChosen } from './bulk';
import { $, isTyping } from './dom';
import { createDialog } from './dialogs';
import { toggleDrawer } from './gauges';
import { showView } from './list';
import { chooseGraph, readHash, refresh, renderSelector } from './load';
import { undoStep } from './moves';
import { showAll, showAround } from './neighbourhood';
import { deleteNode, select } from './panel';
import { clearResults, closeResults } from './search';
import { state } from './state';

export function applyTheme(theme: string | null): void {
  const root = document.documentElement;
  const dark = theme ? theme === 'dark' : matchMedia('(prefers-color-scheme: dark)').matches;
  root.dataset.theme = dark ? 'dark' : 'light';
  graph.restyle();
}

async function switchGraph(): Promise<void> {
  const value = $<HTMLSelectElement>('graph-select').value;
  chooseGraph(value.startsWith('p:') ? value.slice(2) : null, state.both);
  select(null);
  clearChosen();
  clearResults();
  live.connect(state.project);
  await refresh(true);
}

function onKey(ev: KeyboardEvent): void {
  const dialogOpen = $<HTMLDialogElement>('dialog').open;
  if (dialogOpen) return; // the dialog handles its own keys (Esc closes it)
  if (ev.key === '/' && !isTyping(ev.target)) {
    ev.preventDefault();
    $('search').focus();
  } else if (ev.key === 'Escape') {
    if (!$('search-results').hidden) closeResults();
    else if (state.picked) {
      select(null);
      ev.preventDefault();
    } else if (state.chosen.size) clearChosen();
    else if (state.around) showAll();
    else if (!$('moves').hidden) $('moves').hidden = true;
    else if (graph.drawer) toggleDrawer(false);
    if (isTyping(ev.target)) (ev.target as HTMLElement).blur();
  } else if ((ev.key === 'h' || ev.key === 'H') && !ev.ctrlKey && !ev.metaKey && !ev.altKey && !isTyping(ev.target)) {
    if (state.picked) {
      ev.preventDefault();
      void showAround(state.picked, state.around?.k ?? 1);
    }
  } else if (['1', '2', '3'].includes(ev.key) && state.around && !isTyping(ev.target)) {
    ev.preventDefault();
    void showAround(state.around.key, Number(ev.key));
  } else if (ev.key === 'Delete' && !isTyping(ev.target)) {
    const info = state.picked ? graph.nodes.get(state.picked) : undefined;
    if (info) {
      ev.preventDefault();
      void deleteNode(info);
    }
  } else if ((ev.key === 'z' || ev.key === 'Z') && (ev.ctrlKey || ev.metaKey) && !isTyping(ev.target)) {
    if (state.undo) {
      ev.preventDefault();
      void undoStep();
    }
  } else if (['a', 'g', 'l'].includes(ev.key) && !ev.ctrlKey && !ev.metaKey && !ev.altKey && !isTyping(ev.target)) {
    ev.preventDefault();
    if (ev.key === 'a') toggleActivity();
    else showView(ev.key === 'l' ? 'list' : 'graph');
  } else if (ev.key === 'n' && !ev.ctrlKey && !ev.metaKey && !ev.altKey && !isTyping(ev.target)) {
    ev.preventDefault();
    createDialog();
  } else if (['+', '=', '-', '0'].includes(ev.key) && !ev.ctrlKey && !ev.metaKey && !ev.altKey && !isTyping(ev.target)) {
    // `=` is `+` without Shift on most layouts; Ctrl with these keys stays the browser's page zoom.
    ev.preventDefault();
    if (ev.key === '0') graph.fit();
    else if (ev.key === '-') graph.zoomOut();
    else graph.zoomIn();
  }
}

export function wire(): void {
  $('graph-select').addEventListener('change', () => void switchGraph());
  $('switch-graph').addEventListener('click', (ev) => {
    $<HTMLSelectElement>('graph-select').value = (ev.currentTarget as HTMLElement).dataset.to ?? 'user';
    void switchGraph();
  });
  $<HTMLInputElement>('both-levels').addEventListener('change', (ev) => {
    chooseGraph(state.project, (ev.target as HTMLInputElement).checked);
    select(null);
    clearChosen();
    void refresh(true);
  });
  $('new-node').addEventListener('click', createDialog);
  $('relayout').addEventListener('click', () => {
    graph.forgetPicture();
    void refresh(true);
  });
  $('activity-toggle').addEventListener('click', () => toggleActivity());
  $('show-graph').addEventListener('click', () => showView('graph'));
  $('show-list').addEventListener('click', () => showView('list'));
  $('fit').addEventListener('click', () => graph.fit());
  $('zoom-in').addEventListener('click', () => graph.zoomIn());
  $('zoom-out').addEventListener('click', () => graph.zoomOut());
  $<HTMLInputElement>('show-artifacts').addEventListener('change', (ev) => graph.setArtifacts((ev.target as HTMLInputElement).checked));
  $('drawer-toggle').addEventListener('click', () => toggleDrawer());
  $('theme').addEventListener('click', () => {
    const next = document.documentElement.dataset.theme === 'dark' ? 'light' : 'dark';
    localStorage.setItem('kg-theme', next);
    applyTheme(next);
  });
  matchMedia('(prefers-color-scheme: dark)').addEventListener('change', () => applyTheme(localStorage.getItem('kg-theme')));
  window.addEventListener('hashchange', () => {
    const before = `${state.project}|${state.both}`;
    readHash();
    if (`${state.project}|${state.both}` !== before) {
      renderSelector();
      void switchGraph();
    }
  });
  document.addEventListener('keydown', onKey);
}
