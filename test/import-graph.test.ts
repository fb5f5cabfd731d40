// The folders of src/ import each other without a cycle: each folder can be read, tested and
// changed knowing only the folders below it. A file at the top of src/ (main.ts, money.ts,
// errors.ts, …) counts as a module of its own: the composition root imports every folder, and
// every folder imports the money and error kernels, without the two being one knot. Within a
// folder, no two files import each other either (not even for a type).
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative, sep } from 'node:path';
import { describe, expect, it } from 'vitest';

const SRC = 'src';
const IMPORT = /(?:import|export)[^'"]*?from\s+['"](\.[^'"]+)['"]/gs;

function sourceFiles(folder: string): string[] {
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) => {
    const path = join(folder, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') ? [path] : [];
  });
}

/** The top-level folder of src/ a file is in, or the file itself at the top. */
const folderOf = (file: string): string => relative(SRC, file).split(sep)[0]!;

/** The imports between src/'s modules, as `moduleOf` names them (each file, or its folder). */
function importGraph(moduleOf: (file: string) => string): Map<string, Set<string>> {
  const graph = new Map<string, Set<string>>();
  for (const file of sourceFiles(SRC)) {
    const from = moduleOf(file);
    for (const [, specifier] of readFileSync(file, 'utf8').matchAll(IMPORT)) {
      const target = normalize(join(dirname(file), specifier!)).replace(/\.js$/, '.ts');
      if (!target.startsWith(`${SRC}${sep}`)) continue;
      const to = moduleOf(target);
      if (to === from) continue;
      graph.set(from, (graph.get(from) ?? new Set()).add(to));
    }
  }
  return graph;
}

/** One cycle through the graph, as the modules on it, or undefined. */
function findCycle(graph: Map<string, Set<string>>): string[] | undefined {
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const visit = (node: string): string[] | undefined => {
    state.set(node, 'open');
    path.push(node);
    for (const next of graph.get(node) ?? []) {
      if (state.get(next) === 'open') return [...path.slice(path.indexOf(next)), next];
      if (state.get(next) === undefined) {
        const found = visit(next);
        if (found) return found;
      }
    }
    path.pop();
    state.set(node, 'done');
    return undefined;
  };
  for (const node of graph.keys()) {
    if (state.get(node) === undefined) {
      const found = visit(node);
      if (found) return found;
    }
  }
  return undefined;
}

/** A statement that loads a module when the file runs (not `import type` / `export type`). */
const RUNTIME_IMPORT = /^(?:import|export)(?!\s+type\b)[^'";]*?from\s+['"]([^'"]+)['"]/gms;

/** The packages a file of src/ loads when it runs, through every src/ file it loads. */
function packagesLoadedBy(entry: string): Set<string> {
  const packages = new Set<string>();
  const seen = new Set<string>();
  const visit = (file: string): void => {
    if (seen.has(file)) return;
    seen.add(file);
    for (const [, specifier] of readFileSync(file, 'utf8').matchAll(RUNTIME_IMPORT)) {
      if (specifier!.startsWith('.')) {
        visit(normalize(join(dirname(file), specifier!)).replace(/\.js$/, '.ts'));
      } else {
        packages.add(specifier!);
      }
    }
  };
  visit(entry);
  return packages;
}

describe('the import graph of src/', () => {
  it('has no cycle between folders', () => {
    const graph = importGraph(folderOf);
    expect(graph.size).toBeGreaterThan(15); // the walk found the folders
    expect(findCycle(graph)?.join(' → ')).toBeUndefined();
  });

  it('has no cycle between files, type imports included', () => {
    const graph = importGraph((file) => file);
    expect(graph.size).toBeGreaterThan(300); // the walk found the files
    expect(findCycle(graph)?.join(' → ')).toBeUndefined();
  });

  it('finds a cycle when there is one (the check can fail)', () => {
    const graph = new Map([
      ['billing', new Set(['ledger'])],
      ['ledger', new Set(['money.ts', 'billing'])],
    ]);
    expect(findCycle(graph)).toEqual(['billing', 'ledger', 'billing']);
  });

  // Every gateway start starts this thread, which compiles what it loads anew (a thread is an
  // isolate of its own): the vendors' HTTP client, the schema library and the HTTP server are
  // the request path's, not the writer's.
  it("keeps the usage writer's thread to what it writes with", () => {
    const loaded = packagesLoadedBy(join(SRC, 'usage-writer-worker.ts'));
    expect(loaded).toContain('pg'); // the walk followed the thread's imports
    expect(loaded).toContain('ioredis');
    for (const heavy of ['undici', 'zod', 'uWebSockets.js', '@asteasolutions/zod-to-openapi']) {
      expect(loaded, heavy).not.toContain(heavy);
    }
  });
});
