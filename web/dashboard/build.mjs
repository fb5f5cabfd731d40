// Builds the dashboard's front end (web/dashboard/src) into dist/dashboard: one script and one
// stylesheet, and the chunks some pages load later, with content-hashed names (cached for a
// year by the gateway), and index.html that names them (never cached). Run by `npm run build`.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';
import { build } from 'esbuild';

const here = dirname(fileURLToPath(import.meta.url));
const outDir = join(here, '../../dist/dashboard');

rmSync(outDir, { recursive: true, force: true });
mkdirSync(join(outDir, 'assets'), { recursive: true });

const result = await build({
  entryPoints: [join(here, 'src/main.tsx')],
  bundle: true,
  format: 'esm',
  target: ['es2022', 'chrome109', 'firefox115', 'safari16'],
  minify: true,
  sourcemap: false,
  jsx: 'automatic',
  jsxImportSource: 'preact',
  outdir: join(outDir, 'assets'),
  entryNames: '[name]-[hash]',
  // code that only some pages need (the charting library) is fetched with the first of them
  splitting: true,
  chunkNames: 'chunk-[hash]',
  metafile: true,
  logLevel: 'warning',
});

const outputs = Object.keys(result.metafile.outputs).map((file) => basename(file));
const named = (extension) => {
  const file = outputs.find((name) => name.startsWith('main-') && name.endsWith(extension));
  if (!file) throw new Error(`the dashboard build made no ${extension} file`);
  return file;
};
const page = readFileSync(join(here, 'index.html'), 'utf8')
  .replace('{{css}}', named('.css'))
  .replace('{{js}}', named('.js'));
writeFileSync(join(outDir, 'index.html'), page);

// Each asset also compressed once here (brotli at its best quality, and gzip), so the gateway
// sends the smaller form a browser accepts without compressing on every request.
for (const name of outputs) {
  const file = join(outDir, 'assets', name);
  const body = readFileSync(file);
  writeFileSync(
    `${file}.br`,
    brotliCompressSync(body, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } }),
  );
  writeFileSync(`${file}.gz`, gzipSync(body, { level: 9 }));
}
