// GET /dashboard/assets/{file}: the dashboard's scripts and styles. Their names carry a hash of
// their content (a new build makes new names), so they are cached for a year as immutable. Sent
// brotli- or gzip-compressed (compressed at build time) when the browser accepts it.
import { gwError } from '../../errors.js';
import { declareRoute } from '../framework/declaration.js';
import type { DashboardAsset, DashboardBundle } from './bundle.js';

/** The smallest form of the asset that the Accept-Encoding header allows. */
function encodingFor(
  asset: DashboardAsset,
  acceptEncoding: string | undefined,
): { body: Buffer; encoding?: 'br' | 'gzip' } {
  const accepted = new Set(
    (acceptEncoding ?? '')
      .split(',')
      .map((part) => part.trim().split(';'))
      .filter(([, quality]) => quality === undefined || !/^\s*q=0(\.0*)?\s*$/.test(quality))
      .map(([name]) => name!.trim().toLowerCase()),
  );
  if (asset.brotli && accepted.has('br')) return { body: asset.brotli, encoding: 'br' };
  if (asset.gzip && accepted.has('gzip')) return { body: asset.gzip, encoding: 'gzip' };
  return { body: asset.body };
}

export const dashboardAssetRoute = declareRoute({
  method: 'GET',
  path: '/dashboard/assets/{file}',
  summary: 'A content-hashed dashboard asset',
  caller: { kind: 'none' },
  undocumented: true,
  responses: { 200: { description: 'the asset' } },
  errors: ['gw_not_found'],
  handler({ request, params, response }, deps: { readonly dashboardBundle: DashboardBundle }) {
    const asset = deps.dashboardBundle.assets.get(params.file);
    if (!asset) return gwError('gw_not_found', 'no such dashboard asset');
    const { body, encoding } = encodingFor(asset, request.headers['accept-encoding']);
    response.writeHead(200, {
      'content-type': asset.contentType,
      'cache-control': 'public, max-age=31536000, immutable',
      'x-content-type-options': 'nosniff',
      vary: 'accept-encoding',
      ...(encoding && { 'content-encoding': encoding }),
    });
    response.end(body);
  },
});
