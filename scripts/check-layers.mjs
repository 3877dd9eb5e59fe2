#!/usr/bin/env node
// Checks the Rust layers of docs/architecture.md over the `use`/path lines of the sources (imports
// as arrows): a module of a crate's top level may import only from its own layer or below, and no
// two modules import each other, whether directly or round a circle, at the top level or among
// the files of one module. Test code (`#[cfg(test)] mod ...` blocks) is left out.
// Run: node scripts/check-layers.mjs (the test command runs it); exits 1 with the arrows at fault.

import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

// Bottom first. A module of layer n imports from layers 0..n only.
const CRATES = [
  {
    name: 'helpnow',
    src: 'src',
    layers: [
      ['sync', 'config', 'telemetry', 'error', 'client', 'ids', 'domain'],
      ['store', 'realtime', 'cluster'],
      ['ai', 'content', 'mail', 'auth', 'billing', 'metrics', 'adapters', 'dashboard', 'flows', 'experiments'],
      ['funnels', 'members'],
      ['routes', 'loadtest'],
      ['startup'],
    ],
  },
  {
    name: 'helpnow-actors',
    src: 'actors/src',
    layers: [['reply', 'rules', 'mutation'], ['ports', 'live'], ['funnel', 'member'], ['test_support']],
  },
];

// A module's path of names from a file's path: src/a/b.rs and src/a/b/mod.rs are ['a', 'b'].
function modulePath(srcDir, file) {
  const parts = path.relative(srcDir, file).replace(/\.rs$/, '').split(path.sep);
  if (parts[parts.length - 1] === 'mod') parts.pop();
  if (parts.length === 1 && (parts[0] === 'lib' || parts[0] === 'main')) return [];
  if (parts[0] === 'bin') return null; // binaries sit on top of everything
  return parts;
}

// The source without comments, strings and test modules.
function codeOf(source) {
  let code = source
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/\/\/.*$/gm, '')
    .replace(/r#*"[\s\S]*?"#*/g, '""')
    .replace(/"(?:[^"\\]|\\[\s\S])*"/g, '""'); // `\` may end a line (a continued string)
  // Cut `#[cfg(test)] mod name { ... }` blocks by brace matching.
  const testMod = /#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+\w+\s*\{/g;
  let match;
  while ((match = testMod.exec(code))) {
    let depth = 1;
    let i = match.index + match[0].length;
    while (i < code.length && depth > 0) {
      if (code[i] === '{') depth += 1;
      else if (code[i] === '}') depth -= 1;
      i += 1;
    }
    code = code.slice(0, match.index) + code.slice(i);
    testMod.lastIndex = match.index;
  }
  return code;
}

// Expands a use tree (`a::{b, c::{d, self}}`) into paths.
function expandUseTree(tree) {
  tree = tree.replace(/\s+/g, '');
  const open = tree.indexOf('{');
  if (open === -1) return [tree.replace(/::self$/, '').replace(/\bas\w+$/, '')];
  const prefix = tree.slice(0, open);
  const inner = tree.slice(open + 1, tree.lastIndexOf('}'));
  const parts = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < inner.length; i++) {
    if (inner[i] === '{') depth += 1;
    else if (inner[i] === '}') depth -= 1;
    else if (inner[i] === ',' && depth === 0) {
      parts.push(inner.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(inner.slice(start));
  return parts
    .filter((part) => part.length > 0)
    .flatMap((part) => (part === 'self' ? [prefix.replace(/::$/, '')] : expandUseTree(prefix + part)));
}

// The paths a file names: its `use` trees and the `crate::`/`super::` paths in its code.
function pathsIn(code) {
  const paths = [];
  for (const match of code.matchAll(/\buse\s+([^;]+);/g)) {
    const tree = match[1].replace(/\s+as\s+\w+/g, '');
    if (/^(crate|super|self)\b/.test(tree.trim())) paths.push(...expandUseTree(tree));
  }
  const inline = code.replace(/\buse\s+[^;]+;/g, '');
  for (const match of inline.matchAll(/\b(?:crate|super)(?:::[A-Za-z_][A-Za-z0-9_]*)+/g)) {
    paths.push(match[0]);
  }
  return paths;
}

// Resolves a path to the module it names (its longest prefix that is a module), as names.
function resolve(from, pathText, modules, reexports, depth = 0) {
  const segments = pathText.split('::');
  let base;
  if (segments[0] === 'crate') {
    base = [];
    segments.shift();
  } else {
    // In a.rs or a/mod.rs (module a), `self` is a and `super` its parent.
    base = [...from];
    while (segments[0] === 'self' || segments[0] === 'super') {
      if (segments.shift() === 'super') base.pop();
    }
  }
  const full = [...base, ...segments];
  for (let n = full.length; n > 0; n--) {
    const candidate = full.slice(0, n).join('::');
    if (modules.has(candidate)) {
      // An item a module re-exports (`pub use child::Item;`) is the child's.
      const reexported = reexports.get(candidate)?.get(full[n]);
      return reexported && depth < 4 ? resolve(full.slice(0, n), reexported, modules, reexports, depth + 1) ?? full.slice(0, n) : full.slice(0, n);
    }
  }
  return null;
}

// The items each module re-exports: name -> the path it comes from (as written there).
function reexportsOf(srcDir, files) {
  const all = new Map();
  for (const file of files) {
    const names = modulePath(srcDir, file);
    if (!names) continue;
    const code = codeOf(fs.readFileSync(file, 'utf8'));
    const map = new Map();
    for (const match of code.matchAll(/\bpub(?:\([^)]*\))?\s+use\s+([^;]+);/g)) {
      for (const path_ of expandUseTree(match[1].replace(/\s+as\s+\w+/g, ''))) {
        const last = path_.split('::').pop();
        const from = /^(crate|super|self)\b/.test(path_) ? path_ : `self::${path_}`;
        map.set(last, from);
      }
    }
    all.set(names.join('::'), map);
  }
  return all;
}

function walk(dir, files = []) {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) walk(full, files);
    else if (entry.name.endsWith('.rs')) files.push(full);
  }
  return files;
}

// Circles among `nodes` by the edges (Tarjan's strongly connected components of more than one).
function circles(edges) {
  const index = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const found = [];
  let counter = 0;
  const nodes = new Set([...edges.keys(), ...[...edges.values()].flatMap((set) => [...set])]);
  function visit(node) {
    index.set(node, counter);
    low.set(node, counter);
    counter += 1;
    stack.push(node);
    onStack.add(node);
    for (const next of edges.get(node) ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node), low.get(next)));
      } else if (onStack.has(next)) {
        low.set(node, Math.min(low.get(node), index.get(next)));
      }
    }
    if (low.get(node) === index.get(node)) {
      const component = [];
      let member;
      do {
        member = stack.pop();
        onStack.delete(member);
        component.push(member);
      } while (member !== node);
      if (component.length > 1) found.push(component.sort());
    }
  }
  for (const node of [...nodes].sort()) if (!index.has(node)) visit(node);
  return found;
}

const problems = [];
for (const crate of CRATES) {
  const srcDir = path.join(root, crate.src);
  const files = walk(srcDir);
  const modules = new Set();
  for (const file of files) {
    const names = modulePath(srcDir, file);
    if (names) for (let n = 1; n <= names.length; n++) modules.add(names.slice(0, n).join('::'));
  }
  // Modules declared for tests only (`#[cfg(test)] mod tests;` in their parent's file).
  const testOnly = new Set();
  for (const file of files) {
    const parent = modulePath(srcDir, file);
    if (!parent) continue;
    const source = fs.readFileSync(file, 'utf8').replace(/\/\/.*$/gm, '');
    for (const match of source.matchAll(/#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;/g)) {
      testOnly.add([...parent, match[1]].join('::'));
    }
  }
  const isTestOnly = (names) => names.some((_, n) => testOnly.has(names.slice(0, n + 1).join('::')));
  const reexports = reexportsOf(srcDir, files);
  const layerOf = new Map();
  crate.layers.forEach((layer, n) => layer.forEach((name) => layerOf.set(name, n)));
  for (const top of new Set([...modules].map((name) => name.split('::')[0]))) {
    if (!layerOf.has(top)) {
      problems.push(`${crate.name}: module ${top} has no layer in scripts/check-layers.mjs (and docs/architecture.md)`);
    }
  }
  const topEdges = new Map();
  const innerEdges = new Map(); // per top module: edges among its direct children
  const why = new Map();
  for (const file of files) {
    const from = modulePath(srcDir, file);
    if (!from || from.length === 0 || isTestOnly(from)) continue;
    for (const text of pathsIn(codeOf(fs.readFileSync(file, 'utf8')))) {
      const to = resolve(from, text, modules, reexports);
      if (!to) continue;
      const where = path.relative(root, file);
      if (to[0] !== from[0]) {
        if (!topEdges.has(from[0])) topEdges.set(from[0], new Set());
        topEdges.get(from[0]).add(to[0]);
        const key = `${from[0]} -> ${to[0]}`;
        if (!why.has(key)) why.set(key, new Set());
        why.get(key).add(where);
      } else if (from.length > 1 && to.length > 1 && from[1] !== to[1]) {
        const a = `${from[0]}::${from[1]}`;
        const b = `${to[0]}::${to[1]}`;
        if (!innerEdges.has(from[0])) innerEdges.set(from[0], new Map());
        const edges = innerEdges.get(from[0]);
        if (!edges.has(a)) edges.set(a, new Set());
        edges.get(a).add(b);
        const key = `${a} -> ${b}`;
        if (!why.has(key)) why.set(key, new Set());
        why.get(key).add(where);
      }
    }
  }
  for (const [from, targets] of topEdges) {
    for (const to of targets) {
      if (layerOf.has(from) && layerOf.has(to) && layerOf.get(to) > layerOf.get(from)) {
        problems.push(
          `${crate.name}: ${from} (layer ${layerOf.get(from)}) imports ${to} (layer ${layerOf.get(to)}), up a layer: ${[...why.get(`${from} -> ${to}`)].join(', ')}`,
        );
      }
    }
  }
  const explain = (component) =>
    component
      .flatMap((a) => component.filter((b) => why.has(`${a} -> ${b}`)).map((b) => `${a} -> ${b} (${[...why.get(`${a} -> ${b}`)].join(', ')})`))
      .join('; ');
  for (const component of circles(topEdges)) {
    problems.push(`${crate.name}: modules import each other: ${explain(component)}`);
  }
  for (const edges of innerEdges.values()) {
    for (const component of circles(edges)) {
      problems.push(`${crate.name}: modules import each other: ${explain(component)}`);
    }
  }
}

if (problems.length > 0) {
  console.error('Layer check failed (docs/architecture.md):');
  for (const problem of problems) console.error(`- ${problem}`);
  process.exit(1);
}
console.log('Layer check: every import runs down a layer or within one, and no modules import each other.');
