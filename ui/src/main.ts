// KG Memory's graph view. It talks to the server only through REST (`/api/…`) and
// the live WebSocket (`/ws`), on the page's own origin, so the same page runs in the
// tray app's window and in any browser.
//
// The concerns live in their own modules (see app.ts for how they are layered); this
// file binds the actions that go up the layers, installs the test hook, and starts.

import './styles.css';
import { bindActions, live } from './app';
import { choose, toggleChosen } from './bulk';
import { applyTheme, wire } from './chrome';
import { installHook } from './hook';
import { loadGraphs, openWhereWorking, readHash, refresh, renderSelector } from './load';
import { moveTier } from './moves';
import { showAround } from './neighbourhood';
import { focusNode, select } from './panel';
import { wireSearch } from './search';
import { stylesLoaded } from './stylesheet';
import { state } from './state';
import { wireSync } from './syncstatus';
import { onLive, onLiveStatus } from './updates';

bindActions({ refresh, select, focusNode, moveTier, toggleChosen, choose, showAround, onLive, onLiveStatus });
installHook();

async function start(): Promise<void> {
  await stylesLoaded();
  applyTheme(localStorage.getItem('kg-theme'));
  const named = readHash();
  wire();
  wireSearch();
  wireSync();
  renderSelector();
  if (!named) {
    // No graph in the URL: the graph list says where the person works.
    await loadGraphs();
    openWhereWorking();
    renderSelector();
    live.connect(state.project);
    await refresh(true);
    return;
  }
  live.connect(state.project);
  // The selector's list and the graph load side by side.
  await Promise.all([loadGraphs(), refresh(true)]);
}

void start();
