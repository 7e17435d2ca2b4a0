// The titles of the three bands ("ACTIVE (90) — in every read · …"), drawn as HTML
// over the canvas rather than as canvas labels. A canvas label scales with the zoom: a
// title sized for the fitted graph became unreadably small when zoomed out and, centred
// over a band wider than the window, ran off both edges of the screen when zoomed in.
// Here a title keeps one screen size at every zoom, starts at the left edge of the
// part of its band that is on screen, and is shown whole or not at all.

import type { Core } from 'cytoscape';
import { h } from './dom';

export type BandName = 'active' | 'archive' | 'drawer';

/** What a band says about itself: its name with its count, and what can be done there. */
export interface BandTitle {
  name: string;
  hint: string;
}

/** A band's box in model coordinates. */
interface BandBox {
  x1: number;
  x2: number;
  y1: number;
  y2: number;
}

/** Screen pixels between a title and its band's edges. */
const INSET = 6;
/** The narrowest a title is shown at: room for its name ("ORPHANED (1,700)"). */
const MIN_WIDTH = 150;

export class BandTitles {
  private readonly els: Record<BandName, { box: HTMLElement; name: HTMLElement; hint: HTMLElement }>;
  /** A title's height on screen, once measured. */
  private lineHeight = 0;
  /** Says a band lies below the canvas's bottom edge (a short window), and brings it up. */
  private readonly below: HTMLButtonElement;
  private belowBand: BandName | null = null;

  /** `reveal` scrolls a band into view (the hint's click). */
  constructor(container: HTMLElement, reveal: (band: BandName) => void) {
    const make = (band: BandName) => {
      const name = h('span', { class: 'name' });
      const hint = h('span', { class: 'hint' });
      const box = h('div', { class: `band-title band-title-${band}`, 'aria-hidden': 'true' }, [name, hint]);
      box.hidden = true;
      container.append(box);
      return { box, name, hint };
    };
    this.els = { active: make('active'), archive: make('archive'), drawer: make('drawer') };
    this.below = h('button', { type: 'button', class: 'below-hint', onclick: () => this.belowBand && reveal(this.belowBand) }) as HTMLButtonElement;
    this.below.hidden = true;
    container.append(this.below);
  }

  /** Put up new texts (the counts change with every refresh). */
  setTexts(titles: Record<BandName, BandTitle>): void {
    for (const band of Object.keys(titles) as BandName[]) {
      const { name, hint } = this.els[band];
      if (name.textContent !== titles[band].name) name.textContent = titles[band].name;
      const text = `— ${titles[band].hint}`;
      if (hint.textContent !== text) hint.textContent = text;
    }
  }

  /**
   * Place the titles for the viewport on screen: each at the top left of the visible
   * part of its band, inside the room above the band's first row where the zoom leaves
   * enough of it, else rising into the gap above the band (never over the band above,
   * nor over another title). A title that would not fit on screen whole is hidden.
   */
  follow(cy: Core, bands: Record<BandName, BandBox>, head: number, drawerOpen: boolean): void {
    const zoom = cy.zoom();
    const pan = cy.pan();
    const width = cy.width();
    const height = cy.height();
    let floor = -Infinity; // the lowest screen y taken by the band, or title, above
    for (const band of ['active', 'archive', 'drawer'] as BandName[]) {
      const { box } = this.els[band];
      const r = bands[band];
      const drawn = band !== 'drawer' || drawerOpen;
      const top = r.y1 * zoom + pan.y;
      const bottom = r.y2 * zoom + pan.y;
      const bandLeft = r.x1 * zoom + pan.x;
      const bandRight = r.x2 * zoom + pan.x;
      const left = Math.max(bandLeft, 0) + INSET;
      // Far zoomed out, a band narrower than its name lends the title the empty canvas
      // to its right (nothing is drawn beside the bands).
      const room = Math.min(Math.max(Math.min(bandRight, width) - INSET - left, MIN_WIDTH), width - left);
      box.hidden = !drawn || room < MIN_WIDTH || bandRight <= 0 || bandLeft >= width || bottom <= 0 || top >= height;
      if (!box.hidden) {
        box.style.maxWidth = `${Math.floor(room)}px`;
        // One line (CSS: no wrapping), so one height: measured once, not on every frame.
        this.lineHeight ||= box.offsetHeight;
        const tall = this.lineHeight;
        const y = Math.max(Math.min(top + INSET, top + head * zoom - tall - INSET / 2), floor + INSET / 2);
        if (y >= 0 && y + tall <= height) {
          box.style.transform = `translate(${Math.round(left)}px, ${Math.round(y)}px)`;
          floor = Math.max(floor, y + tall);
        } else {
          box.hidden = true;
        }
      }
      if (drawn) floor = Math.max(floor, bottom);
    }
    // The first band wholly under the bottom edge gets a hint there: a short window
    // would otherwise hide the archived band with nothing to say it exists.
    const hidden = (['archive', 'drawer'] as BandName[]).find((band) => (band !== 'drawer' || drawerOpen) && bands[band].y1 * zoom + pan.y >= height - INSET);
    const name = hidden ? this.els[hidden].name.textContent ?? '' : '';
    if (hidden !== this.belowBand || (hidden && !this.below.textContent?.includes(name))) {
      this.belowBand = hidden ?? null;
      this.below.hidden = !hidden;
      this.below.textContent = hidden ? `▾ ${name} below` : '';
      this.below.title = hidden ? `Scroll down to the ${hidden === 'archive' ? 'archived band' : 'orphaned drawer'}` : '';
    }
  }
}
