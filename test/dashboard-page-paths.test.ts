// The gateway's status for a path under /dashboard/ (src/routes/dashboard-ui/page.ts) and the
// app's own reading of it (web/dashboard/src/views.ts) agree: 404 exactly where the app shows
// its not-found page, and the API's and the assets' namespaces are never pages.
import { describe, expect, it } from 'vitest';
import { dashboardPathKind } from '../src/routes/dashboard-ui/page.js';
import { parseView } from '../web/dashboard/src/views.js';

const paths = [
  '',
  '/',
  'sign-in',
  'sign-in/',
  'sign-up',
  'models',
  'models/',
  'account',
  'account/',
  'account/x',
  'orgs',
  'orgs/',
  'orgs//',
  'orgs/org_1',
  'orgs/org_1/',
  'orgs/org_1/apps',
  'orgs/org_1/apps/app_1',
  'orgs/org_1/apps/app_1/',
  'orgs/org_1/nope',
  'orgs/org_1/apps/app_1/extra',
  'orgs//org_1',
  'orgs/%E2%82%AC',
  'orgs/%',
  'no-such-page',
  'no-such-page/',
  'a/b',
  'a/b/c/d/e',
  'model',
  'SIGN-IN',
  '%',
  '%6Dodels',
];

describe('dashboard paths', () => {
  it.each(paths)(
    '/dashboard/%s: the gateway answers 404 exactly where the app has no page',
    (rest) => {
      const kind = dashboardPathKind(rest);
      expect(kind).not.toBe('not-a-page');
      expect(kind === 'not-found').toBe(parseView(`/dashboard/${rest}`).page === 'not-found');
    },
  );

  it('leaves the API and the assets to their own routes', () => {
    for (const rest of [
      'api',
      'api/',
      'api/nope',
      'assets',
      'assets/a/b',
      '/api/x',
      '%61pi/x',
      'api/%',
    ]) {
      expect(dashboardPathKind(rest), rest).toBe('not-a-page');
    }
  });

  it('opens the home page for /dashboard/orgs/ (your organization)', () => {
    expect(parseView('/dashboard/orgs/')).toEqual({ page: 'home' });
    expect(dashboardPathKind('orgs/')).toBe('page');
  });
});
