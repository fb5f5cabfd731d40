// Matches a request's method and path to a route: exact paths by one map lookup, paths with
// `{name}` segments (each matching one non-empty segment) by their compiled patterns.
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
  private readonly patterns: PatternRoute[] = [];

  constructor(routes: readonly Route[]) {
    for (const route of routes) {
      if (!route.path.includes('{')) {
        this.exact.set(`${route.method} ${route.path}`, route);
        continue;
      }
      const names: string[] = [];
      const source = route.path
        .split('/')
        .map((segment) => {
          const name = /^\{(\w+)\}$/.exec(segment)?.[1];
          if (!name) return segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
          names.push(name);
          return '([^/]+)';
        })
        .join('/');
      this.patterns.push({ route, pattern: new RegExp(`^${source}$`), names });
    }
  }

  match(method: string, path: string): RouteMatch {
    const exact = this.exact.get(`${method} ${path}`);
    if (exact) return { kind: 'route', route: exact, params: NO_PARAMS };
    const allowed = new Set<string>();
    for (const [key] of this.exact) {
      const [routeMethod, routePath] = splitKey(key);
      if (routePath === path) allowed.add(routeMethod);
    }
    for (const { route, pattern, names } of this.patterns) {
      const found = pattern.exec(path);
      if (!found) continue;
      if (route.method !== method) {
        allowed.add(route.method);
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
