// node scripts/forget-incomplete-build.mjs: run before the incremental build (package.json's
// `build`). tsc trusts its build information (dist/tsconfig.build.tsbuildinfo) and does not look
// at its outputs: with one compiled file deleted from dist/ but the build information kept, the
// next build writes nothing and `npm start` fails with "module not found". When a source file's
// output is missing, this deletes the build information, so tsc compiles everything again.
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The compiled files the build must leave for the sources under `roots` (tests excluded). */
function expectedOutputs(projectRoot, roots, outDir) {
  const outputs = [];
  const visit = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) visit(path);
      else if (isCompiledSource(entry.name))
        outputs.push(join(outDir, relative(projectRoot, path)).replace(/\.ts$/, '.js'));
    }
  };
  for (const root of roots) visit(join(projectRoot, root));
  return outputs;
}

function isCompiledSource(name) {
  return name.endsWith('.ts') && !name.endsWith('.d.ts') && !name.endsWith('.test.ts');
}

/**
 * Deletes `buildInfo` when any output of the sources under `roots` is missing from `outDir`.
 * Returns the outputs found missing (empty when the build information was kept or absent).
 */
export function forgetIncompleteBuild({ projectRoot, roots, outDir, buildInfo }) {
  if (!existsSync(buildInfo)) return [];
  const missing = expectedOutputs(projectRoot, roots, outDir).filter((file) => !existsSync(file));
  if (missing.length > 0) rmSync(buildInfo);
  return missing;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const projectRoot = fileURLToPath(new URL('..', import.meta.url));
  const outDir = join(projectRoot, 'dist');
  const missing = forgetIncompleteBuild({
    projectRoot,
    roots: ['src', 'bench'],
    outDir,
    buildInfo: join(outDir, 'tsconfig.build.tsbuildinfo'),
  });
  if (missing.length > 0)
    console.log(
      `dist/ lacks ${missing.length} compiled file(s) (${relative(projectRoot, missing[0])}…): building everything`,
    );
}
