// The graph view's structure, checked: no import circle among its modules (type-only
// imports count: a circle of types is a circle of concerns), no module over 800 lines
// of code (blank lines and comments aside; kg-test-support's structure.rs holds every
// Rust file to the same limit, counted the same way), and each slice of `state`
// written only by the module state.ts names as its `@owner`. Run by scripts/test.sh:
//   node ui/scripts/structure.mjs [folder]   (default: ui/src)
// Exits 1 with what is wrong.

import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const MAX_CODE_LINES = 800;

/** The .ts files under `dir`, by path relative to it (generated code aside). */
function modules(dir) {
  const found = [];
  const walk = (sub) => {
    for (const entry of fs.readdirSync(path.join(dir, sub), { withFileTypes: true })) {
      const rel = path.join(sub, entry.name);
      if (entry.isDirectory()) walk(rel);
      else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) found.push(rel);
    }
  };
  walk('');
  return found.sort();
}

/** The modules a file imports or re-exports from, resolved to paths relative to `dir`. */
export function importsOf(dir, file) {
  const text = fs.readFileSync(path.join(dir, file), 'utf8');
  const deps = new Set();
  const re = /^\s*(?:import|export)\s[^;]*?from\s+['"](\.{1,2}\/[^'"]+)['"]|^\s*import\s+['"](\.{1,2}\/[^'"]+)['"]/gms;
  for (const m of text.matchAll(re)) {
    const spec = m[1] ?? m[2];
    if (!spec.endsWith('.ts') && /\.\w+$/.test(spec)) continue; // styles.css and the like
    const target = path.normalize(path.join(path.dirname(file), spec.endsWith('.ts') ? spec : `${spec}.ts`));
    deps.add(target);
  }
  return [...deps];
}

/** Every import circle, each as the modules around it (the smallest module first). */
export function findCycles(dir) {
  const files = modules(dir);
  const graph = new Map(files.map((f) => [f, importsOf(dir, f).filter((d) => files.includes(d))]));
  const cycles = [];
  const seen = new Set();
  // Tarjan's strongly connected components: a component of more than one module, or
  // one that imports itself, is a circle.
  let index = 0;
  const idx = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const connect = (v) => {
    idx.set(v, index);
    low.set(v, index);
    index += 1;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v)) {
      if (!idx.has(w)) {
        connect(w);
        low.set(v, Math.min(low.get(v), low.get(w)));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v), idx.get(w)));
    }
    if (low.get(v) === idx.get(v)) {
      const component = [];
      let w;
      do {
        w = stack.pop();
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || graph.get(v).includes(v)) {
        const key = [...component].sort().join(' ');
        if (!seen.has(key)) {
          seen.add(key);
          cycles.push([...component].sort());
        }
      }
    }
  };
  for (const f of files) if (!idx.has(f)) connect(f);
  return cycles;
}

/** Lines of code: not blank, not only a comment. */
export function codeLines(text) {
  let count = 0;
  let inBlock = false;
  for (const raw of text.split('\n')) {
    let line = raw.trim();
    if (inBlock) {
      const end = line.indexOf('*/');
      if (end < 0) continue;
      inBlock = false;
      line = line.slice(end + 2).trim();
    }
    while (line.startsWith('/*')) {
      const end = line.indexOf('*/', 2);
      if (end < 0) {
        inBlock = true;
        line = '';
        break;
      }
      line = line.slice(end + 2).trim();
    }
    if (line === '' || line.startsWith('//')) continue;
    count += 1;
  }
  return count;
}

/**
 * The owner of each slice of `state` (state.ts): the module its doc comment names with
 * `@owner <file>`. A slice without one is reported as such (owner null).
 */
export function stateOwners(dir) {
  const file = path.join(dir, 'state.ts');
  if (!fs.existsSync(file)) return new Map();
  const lines = fs.readFileSync(file, 'utf8').split('\n');
  const start = lines.findIndex((l) => /^export const state = \{/.test(l));
  const owners = new Map();
  let comment = '';
  for (const line of lines.slice(start + 1)) {
    if (/^\};?/.test(line)) break;
    if (/^  \/\*\*|^  \/\/|^   \*/.test(line)) {
      comment = /^  \/\*\*/.test(line) ? line : `${comment}\n${line}`;
      continue;
    }
    const key = line.match(/^  (\w+):/);
    if (key) {
      owners.set(key[1], comment.match(/@owner\s+(\S+?\.ts)/)?.[1] ?? null);
      comment = '';
    } else if (line.trim() === '') comment = '';
  }
  return owners;
}

/** Writes to `state.<slice>` in a module's text: assignments, `++`/`--`, and mutating calls. */
export function stateWrites(text) {
  const writes = [];
  const assign = /\bstate\.(\w+)((?:\.\w+|\[[^\]\n]*\])*)\s*(?:[-+*/]?=(?!=)|\+\+|--)/g;
  const call = /\bstate\.(\w+)(?:\.\w+|\[[^\]\n]*\])*\.(?:add|delete|clear|set|push|pop|splice|shift|unshift|sort)\(/g;
  const merge = /Object\.assign\(\s*state\.(\w+)/g;
  for (const re of [assign, call, merge]) for (const m of text.matchAll(re)) writes.push(m[1]);
  return writes;
}

/** What is wrong with the modules under `dir`, one sentence each. */
export function problems(dir) {
  const found = [];
  const owners = stateOwners(dir);
  for (const [slice, owner] of owners) if (!owner) found.push(`state.${slice} names no @owner in state.ts`);
  for (const f of modules(dir)) {
    if (f === 'state.ts') continue;
    const text = fs.readFileSync(path.join(dir, f), 'utf8');
    for (const slice of new Set(stateWrites(text))) {
      const owner = owners.get(slice);
      if (owner && owner !== f) found.push(`${f} writes state.${slice}, which ${owner} owns: call an update ${owner} exposes`);
    }
  }
  for (const cycle of findCycles(dir)) found.push(`import circle: ${cycle.join(' → ')} (each reaches the others)`);
  for (const f of modules(dir)) {
    if (f.startsWith(`generated${path.sep}`)) continue;
    const n = codeLines(fs.readFileSync(path.join(dir, f), 'utf8'));
    if (n > MAX_CODE_LINES) found.push(`${f} has ${n} lines of code, over ${MAX_CODE_LINES}: split it by what a person sees`);
  }
  return found;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const dir = process.argv[2] ?? path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'src');
  const found = problems(dir);
  for (const p of found) console.error(`ui structure: ${p}`);
  if (found.length) process.exit(1);
  console.log(`ui structure: ${modules(dir).length} modules, no import circle, none over ${MAX_CODE_LINES} lines of code, ${stateOwners(dir).size} slices of state each written by its owner`);
}
