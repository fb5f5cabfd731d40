// The image's build stage runs `npm run build` on what it copied: every file the build script
// names must be copied before it (a script added to the build and not to the Dockerfile broke
// `docker build` while every local build passed: decision 509's script).
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const root = new URL('../', import.meta.url);
const read = (path: string): string => readFileSync(new URL(path, root), 'utf8');

/** The files and folders the build stage copies before `RUN npm run build`. */
function copiedBeforeBuild(dockerfile: string): string[] {
  const buildStage = dockerfile.split(/^FROM /m)[1] ?? '';
  const beforeBuild = buildStage.split(/^RUN npm run build$/m)[0] ?? '';
  return [...beforeBuild.matchAll(/^COPY (?!--from)(.+) (\S+)$/gm)].flatMap((match) =>
    match[1]!.split(/\s+/),
  );
}

/** The project files `npm run build` reads by name: scripts it runs, configs, files it copies. */
function namedByBuild(script: string): string[] {
  const named = [
    ...script.matchAll(/\bnode (\S+)/g),
    ...script.matchAll(/\btsc -p (\S+)/g),
    ...script.matchAll(/\bcp (\S+) /g),
  ].map((match) => match[1]!);
  return [...new Set(named)];
}

describe('the Dockerfile builds what npm run build needs', () => {
  it('copies every file the build script names before running it', () => {
    const build = (JSON.parse(read('package.json')) as { scripts: { build: string } }).scripts
      .build;
    const named = namedByBuild(build);
    expect(named).toContain('scripts/forget-incomplete-build.mjs');
    expect(named).toContain('tsconfig.build.json');
    const copied = copiedBeforeBuild(read('Dockerfile'));
    const missing = named.filter(
      (file) =>
        !copied.some((entry) => {
          const path = entry.replace(/\/$/, '');
          return file === path || file.startsWith(`${path}/`);
        }),
    );
    expect(missing).toEqual([]);
  });
});
