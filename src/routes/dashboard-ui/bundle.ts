// The dashboard's built front end (web/dashboard, bundled by `npm run build` into
// dist/dashboard): read once at boot and served from memory. Asset names carry a hash of their
// content, so they can be cached for a year; the page that names them is never cached.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface DashboardAsset {
  readonly contentType: string;
  readonly body: Buffer;
  /** The same content compressed at build time (absent from an older build). */
  readonly brotli?: Buffer;
  readonly gzip?: Buffer;
}

export interface DashboardBundle {
  /** The single page, or null when the front end was not built. */
  readonly html: Buffer | null;
  /** Hashed asset file name → its content. */
  readonly assets: ReadonlyMap<string, DashboardAsset>;
}

/** dist/dashboard, next to dist/src where this module is compiled to. */
export const DASHBOARD_BUILD_DIR = fileURLToPath(new URL('../../../dashboard/', import.meta.url));

const contentTypes: Readonly<Record<string, string>> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.woff2': 'font/woff2',
};

export function loadDashboardBundle(dir: string = DASHBOARD_BUILD_DIR): DashboardBundle {
  const page = join(dir, 'index.html');
  if (!existsSync(page)) return { html: null, assets: new Map() };
  const assets = new Map<string, DashboardAsset>();
  const assetDir = join(dir, 'assets');
  const names = existsSync(assetDir) ? readdirSync(assetDir) : [];
  const variant = (name: string): Buffer | undefined =>
    names.includes(name) ? readFileSync(join(assetDir, name)) : undefined;
  for (const name of names) {
    const contentType = contentTypes[extname(name)];
    if (!contentType) continue; // the .br and .gz variants are read with their asset
    const brotli = variant(`${name}.br`);
    const gzip = variant(`${name}.gz`);
    assets.set(name, {
      contentType,
      body: readFileSync(join(assetDir, name)),
      ...(brotli && { brotli }),
      ...(gzip && { gzip }),
    });
  }
  return { html: readFileSync(page), assets };
}
