// Matches a request's method and path to a route: exact paths by one map lookup, paths with
// `{name}` segments (each matching one non-empty segment) by their compiled patterns, and last
// paths ending in a catch-all `{name*}` (the rest of the path: one or more segments), so a
// catch-all never shadows a more precise route: a path that a more precise route names with
// another method answers 405, not the catch-all. A fallback catch-all (Route.fallback) answers
// only its own method and never adds to a 405's Allow.
import type { Route } from './types.js';

export type RouteMatch =
  | { readonly kind: 'route'; readonly route: Route; readonly params: Record<string, string> }
  | { readonly kind: 'wrong_method'; readonly allowed: readonly string[] }
  | { readonly kind: 'none' };

interface PatternRoute {
  readonly route: Route;
  readonly pattern: RegExp;
  readonly names: readonly string[];
}

const NO_PARAMS: Record<string, string> = Object.freeze({}) as Record<string, string>;

export class RouteTable {
  private readonly exact = new Map<string, Route>();
  /** `{name}` patterns in declaration order, then the catch-alls. */
  private readonly patterns: PatternRoute[] = [];
  /** Where the catch-alls start in `patterns`. */
  private readonly firstCatchAll: number;

  constructor(routes: readonly Route[]) {
    const tails: PatternRoute[] = [];
    for (const route of routes) {
      if (route.fallback && !route.path.endsWith('*}'))
        throw new Error(`a fallback must be a catch-all: ${route.path}`);
      if (!route.path.includes('{')) {
        this.exact.set(`${route.method} ${route.path}`, route);
        continue;
      }
      const names: string[] = [];
      const segments = route.path.split('/');
      const source = segments
        .map((segment, index) => {
          const [, name, star] = /^\{(\w+)(\*?)\}$/.exec(segment) ?? [];
          if (!name) return segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
          if (star && index !== segments.length - 1)
            throw new Error(`a catch-all must be the last segment: ${route.path}`);
          names.push(name);
          return star ? '(.+)' : '([^/]+)';
        })
        .join('/');
      const list = route.path.endsWith('*}') ? tails : this.patterns;
      list.push({ route, pattern: new RegExp(`^${source}$`), names });
    }
    this.firstCatchAll = this.patterns.length;
    this.patterns.push(...tails);
  }

  match(method: string, path: string): RouteMatch {
    const exact = this.exact.get(`${method} ${path}`);
    if (exact) return { kind: 'route', route: exact, params: NO_PARAMS };
    const allowed = new Set<string>();
    for (const [key] of this.exact) {
      const [routeMethod, routePath] = splitKey(key);
      if (routePath === path) allowed.add(routeMethod);
    }
    for (const [position, { route, pattern, names }] of this.patterns.entries()) {
      // The precise routes of this path take other methods: theirs is the answer (405).
      if (position === this.firstCatchAll && allowed.size > 0) break;
      const found = pattern.exec(path);
      if (!found) continue;
      if (route.method !== method) {
        if (!route.fallback) allowed.add(route.method);
        continue;
      }
      const params: Record<string, string> = {};
      for (const [index, name] of names.entries()) {
        const raw = found[index + 1]!;
        let value: string;
        try {
          value = decodeURIComponent(raw);
        } catch {
          value = raw; // not valid percent-encoding: matched as written, validated by the route
        }
        params[name] = value;
      }
      return { kind: 'route', route, params };
    }
    return allowed.size > 0 ? { kind: 'wrong_method', allowed: [...allowed] } : { kind: 'none' };
  }
}

function splitKey(key: string): [string, string] {
  const space = key.indexOf(' ');
  return [key.slice(0, space), key.slice(space + 1)];
}
