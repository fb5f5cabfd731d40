import { mkdirSync, mkdtempSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
// @ts-expect-error: a plain .mjs script without types (package.json's `build` runs it)
import { forgetIncompleteBuild } from '../scripts/forget-incomplete-build.mjs';

/** A project with src/a.ts, src/cli/b.ts, src/a.test.ts and its build: dist/ and build info. */
function project(): { root: string; buildInfo: string; args: Record<string, unknown> } {
  const root = mkdtempSync(join(tmpdir(), 'gw-build-'));
  mkdirSync(join(root, 'src/cli'), { recursive: true });
  mkdirSync(join(root, 'dist/src/cli'), { recursive: true });
  for (const file of ['src/a.ts', 'src/cli/b.ts', 'src/a.test.ts', 'src/types.d.ts'])
    writeFileSync(join(root, file), '');
  for (const file of ['dist/src/a.js', 'dist/src/cli/b.js']) writeFileSync(join(root, file), '');
  const buildInfo = join(root, 'dist/tsconfig.build.tsbuildinfo');
  writeFileSync(buildInfo, '{}');
  return {
    root,
    buildInfo,
    args: { projectRoot: root, roots: ['src'], outDir: join(root, 'dist'), buildInfo },
  };
}

const made: string[] = [];
afterEach(() => {
  for (const root of made.splice(0)) rmSync(root, { recursive: true, force: true });
});

describe('the incremental build forgets its build information when an output is gone', () => {
  it('keeps the build information when every source has its output (tests and .d.ts have none)', () => {
    const { root, buildInfo, args } = project();
    made.push(root);
    expect(forgetIncompleteBuild(args)).toEqual([]);
    expect(existsSync(buildInfo)).toBe(true);
  });

  it('deletes it when one compiled file was deleted from dist/, naming the file', () => {
    const { root, buildInfo, args } = project();
    made.push(root);
    rmSync(join(root, 'dist/src/cli/b.js'));
    expect(forgetIncompleteBuild(args)).toEqual([join(root, 'dist/src/cli/b.js')]);
    expect(existsSync(buildInfo)).toBe(false);
  });

  it('does nothing when there is no build information (a first build compiles everything)', () => {
    const { root, buildInfo, args } = project();
    made.push(root);
    rmSync(buildInfo);
    rmSync(join(root, 'dist/src/a.js'));
    expect(forgetIncompleteBuild(args)).toEqual([]);
  });
});
