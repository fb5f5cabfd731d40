// GET /dashboard/assets/{file}: the dashboard's scripts and styles. Their names carry a hash of
// their content (a new build makes new names), so they are cached for a year as immutable.
import { gwError } from '../../errors.js';
import { sendError } from '../../http/respond.js';
import { declareRoute } from '../framework/declaration.js';
import type { DashboardBundle } from './bundle.js';

export const dashboardAssetRoute = declareRoute({
  method: 'GET',
  path: '/dashboard/assets/{file}',
  summary: 'A content-hashed dashboard asset',
  caller: { kind: 'none' },
  undocumented: true,
  responses: { 200: { description: 'the asset' } },
  errors: ['gw_not_found'],
  handler({ request }, response, deps: { readonly dashboardBundle: DashboardBundle }) {
    const asset = deps.dashboardBundle.assets.get(request.params.file ?? '');
    if (!asset) return sendError(response, gwError('gw_not_found', 'no such dashboard asset'));
    response.writeHead(200, {
      'content-type': asset.contentType,
      'cache-control': 'public, max-age=31536000, immutable',
      'x-content-type-options': 'nosniff',
    });
    response.end(asset.body);
  },
});
