// Topics: what a node is about, read from its id (`auth-jwt-rotation` is about `auth`).
// Nodes are coloured by topic and the layout groups them by topic; the legend under
// the graph lists the topics, and clicking one shows that topic alone.

/** How many topics get a colour of their own; the rest share the neutral one. The
 * first ten are the most distinct, for the biggest topics. */
export const TOPIC_COLOURS = 20;

/** A node's topic: its id up to the first `-`, lower-cased ('' when the id has none). */
export function topicOf(id: string): string {
  const dash = id.indexOf('-');
  return dash > 0 ? id.slice(0, dash).toLowerCase() : '';
}

export const topicName = (topic: string): string => topic || '(no prefix)';

/** The colour class of a topic's colour slot (`t0`…`t19`, `tx` past the palette). */
export const colourClass = (slot: number): string => (slot < TOPIC_COLOURS ? `t${slot}` : 'tx');

/** The first colours, the most distinct: the ones topics take while they last. */
const DISTINCT = 10;

/**
 * The colour slot a topic takes when `taken` are gone: the one its name points at
 * among the most distinct colours, else the next free one there, then among the
 * others (past the palette when all are taken). So a topic keeps its colour from one
 * view to another unless a bigger topic there holds its slot.
 */
export function claimSlot(topic: string, taken: Set<number>): number {
  let hash = 0;
  for (const ch of topic) hash = (hash * 31 + ch.charCodeAt(0)) >>> 0;
  for (const [from, to] of [
    [0, DISTINCT],
    [DISTINCT, TOPIC_COLOURS],
  ]) {
    const span = to - from;
    for (let i = 0; i < span; i++) {
      const slot = from + ((hash + i) % span);
      if (!taken.has(slot)) return slot;
    }
  }
  return TOPIC_COLOURS;
}

export interface TopicCount {
  topic: string;
  count: number;
  slot: number;
}

/**
 * The legend: one button per topic, pressed while that topic is shown alone. Clicking
 * a pressed topic shows every topic again.
 */
export class TopicLegend {
  constructor(
    private readonly box: HTMLElement,
    private readonly toggle: (topic: string) => void,
  ) {}

  render(topics: TopicCount[], only: string | null): void {
    this.box.replaceChildren();
    this.box.hidden = topics.length < 2;
    for (const t of topics) {
      const chip = document.createElement('button');
      chip.type = 'button';
      chip.className = 'topic';
      chip.dataset.topic = t.topic;
      chip.setAttribute('aria-pressed', String(only === t.topic));
      chip.title = only === t.topic ? 'Show every topic' : `Show only ${topicName(t.topic)}`;
      const swatch = document.createElement('i');
      swatch.className = `sw-topic ${colourClass(t.slot)}`;
      const count = document.createElement('span');
      count.className = 'muted';
      count.textContent = String(t.count);
      chip.append(swatch, `${topicName(t.topic)} `, count);
      chip.addEventListener('click', () => this.toggle(t.topic));
      this.box.append(chip);
    }
    this.box.classList.toggle('filtering', only !== null);
  }
}
