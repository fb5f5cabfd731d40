// The route table: exact paths first, then `{param}` segments, then catch-alls (`{rest*}`).
import { describe, expect, it } from 'vitest';
import { RouteTable } from './route-table.js';
import type { Route } from './types.js';

const route = (method: Route['method'], path: string): Route => ({
  method,
  path,
  handler: () => undefined,
});

const page = route('GET', '/dashboard/orgs/{page*}');
const members = route('GET', '/dashboard/orgs/{org_id}/members');
const exact = route('GET', '/dashboard/orgs/special');
const table = new RouteTable([page, members, exact]);

describe('RouteTable catch-all segments', () => {
  it('match the rest of the path, one or more segments, decoded', () => {
    expect(table.match('GET', '/dashboard/orgs/org_1/apps/app%202')).toEqual({
      kind: 'route',
      route: page,
      params: { page: 'org_1/apps/app 2' },
    });
    expect(table.match('GET', '/dashboard/orgs/').kind).toBe('none');
  });

  it('never shadow an exact route or a {param} route declared after them', () => {
    expect(table.match('GET', '/dashboard/orgs/special')).toMatchObject({ route: exact });
    expect(table.match('GET', '/dashboard/orgs/org_1/members')).toEqual({
      kind: 'route',
      route: members,
      params: { org_id: 'org_1' },
    });
  });

  it('answer another method with the allowed one', () => {
    expect(table.match('POST', '/dashboard/orgs/org_1/apps')).toEqual({
      kind: 'wrong_method',
      allowed: ['GET'],
    });
  });

  it('leave a path to its precise routes when they take another method', () => {
    const apps = route('POST', '/dashboard/api/orgs/{org_id}/apps');
    const pages: Route = { ...route('GET', '/dashboard/{page*}'), fallback: true };
    const shared = new RouteTable([apps, pages]);
    expect(shared.match('GET', '/dashboard/api/orgs/org_1/apps')).toEqual({
      kind: 'wrong_method',
      allowed: ['POST'],
    });
    expect(shared.match('GET', '/dashboard/orgs/org_1/apps')).toMatchObject({ route: pages });
  });

  it('as fallbacks, answer only their own method: a path nothing else takes is not found', () => {
    const pages: Route = { ...route('GET', '/dashboard/{page*}'), fallback: true };
    const shared = new RouteTable([route('DELETE', '/dashboard/api/apps/{app_id}'), pages]);
    expect(shared.match('POST', '/dashboard/api/nope')).toEqual({ kind: 'none' });
    expect(shared.match('PUT', '/dashboard/a/b')).toEqual({ kind: 'none' });
    expect(shared.match('GET', '/dashboard/api/apps/app_1')).toEqual({
      kind: 'wrong_method',
      allowed: ['DELETE'],
    });
    expect(() => new RouteTable([{ ...route('GET', '/a/{b}'), fallback: true }])).toThrow(
      /catch-all/,
    );
  });

  it('must be the last segment', () => {
    expect(() => new RouteTable([route('GET', '/a/{rest*}/b')])).toThrow(/last segment/);
  });
});
