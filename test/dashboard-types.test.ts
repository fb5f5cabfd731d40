// The dashboard's types of the API's answers are the server's response schemas (decision 532):
// web/dashboard/src reads them as `z.output<typeof …Schema>` through type-only imports of the
// answers modules (src/routes/**/answers.ts, *-answers.ts). Those modules import zod and one
// another alone: the dashboard is typechecked with DOM types and no node ones, and a value
// import would bundle the server's code. And a field renamed on the server fails the
// dashboard's typecheck where a page reads it, shown here by compiling the dashboard against
// answers modules with fields renamed in memory.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative, resolve, sep } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '..');
const DASHBOARD = join(ROOT, 'web/dashboard/src');

/** Every import and re-export statement of a file, with its specifier and whether it is all types. */
const STATEMENT = /^(import|export)\b([^'";]*?)from\s+['"]([^'"]+)['"]/gms;

interface Import {
  readonly file: string;
  readonly specifier: string;
  readonly typeOnly: boolean;
}

function importsOf(file: string): Import[] {
  return [...readFileSync(file, 'utf8').matchAll(STATEMENT)].map(([, , clause, specifier]) => ({
    file,
    specifier: specifier!,
    typeOnly: /^\s+type\b/.test(clause!),
  }));
}

const resolved = (from: string, specifier: string): string =>
  normalize(join(dirname(from), specifier)).replace(/\.js$/, '.ts');

function sourceFiles(folder: string): string[] {
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) => {
    const path = join(folder, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return /\.tsx?$/.test(entry.name) ? [path] : [];
  });
}

const isAnswersModule = (file: string): boolean =>
  relative(ROOT, file).startsWith(`src${sep}routes${sep}`) && /(^|[/-])answers\.ts$/.test(file);

/**
 * What the modules `entries` reach, following every import (tsc reads a type import's module as
 * it reads any other): the files, and each import that is neither zod nor an answers module.
 */
function reach(entries: readonly string[]): { files: Set<string>; strays: string[] } {
  const files = new Set<string>();
  const strays: string[] = [];
  const visit = (file: string): void => {
    if (files.has(file)) return;
    files.add(file);
    for (const { specifier } of importsOf(file)) {
      if (!specifier.startsWith('.')) {
        if (specifier !== 'zod') strays.push(`${relative(ROOT, file)} → ${specifier}`);
        continue;
      }
      const target = resolved(file, specifier);
      if (!isAnswersModule(target)) {
        strays.push(`${relative(ROOT, file)} → ${relative(ROOT, target)}`);
        continue;
      }
      visit(target);
    }
  };
  entries.forEach(visit);
  return { files, strays };
}

const shown = ({ file, specifier }: Import): string => `${relative(ROOT, file)} → ${specifier}`;

/** The dashboard's imports of the server's modules and of zod. */
const serverImports = (): Import[] =>
  sourceFiles(DASHBOARD)
    .flatMap(importsOf)
    .filter(
      ({ file, specifier }) =>
        specifier === 'zod' ||
        (specifier.startsWith('.') && !resolved(file, specifier).startsWith(DASHBOARD)),
    );

/**
 * The dashboard's typecheck (web/dashboard/tsconfig.json) of `pages` and what they import, with
 * `edits` made to server files.
 */
function dashboardTypeErrors(
  pages: readonly string[],
  edits: Readonly<Record<string, [string, string][]>>,
): string[] {
  const configPath = join(ROOT, 'web/dashboard/tsconfig.json');
  const config = ts.getParsedCommandLineOfConfigFile(
    configPath,
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (diagnostic) => {
        throw new Error(ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'));
      },
    },
  )!;
  const host = ts.createCompilerHost(config.options);
  const readFile = host.readFile.bind(host);
  host.readFile = (path) => {
    let text = readFile(path);
    for (const [from, to] of edits[relative(ROOT, path)] ?? []) {
      expect(text, `${path} holds ${from}`).toContain(from);
      text = text!.replace(from, to);
    }
    return text;
  };
  const program = ts.createProgram(
    pages.map((page) => join(DASHBOARD, page)),
    config.options,
    host,
  );
  return ts.getPreEmitDiagnostics(program).map((diagnostic) => {
    const where = diagnostic.file ? relative(ROOT, diagnostic.file.fileName) : '';
    return `${where}: ${ts.flattenDiagnosticMessageText(diagnostic.messageText, ' ')}`;
  });
}

describe("the dashboard's types of the API's answers", () => {
  // A value import of zod or of an answers module would put them in the bundle. (The few
  // constants the dashboard shares with the server, such as the password rule's length, are
  // value imports of small modules of their own, bundled on purpose.)
  it('imports zod and the answers modules as types only', () => {
    const imports = serverImports().filter(
      ({ file, specifier }) => specifier === 'zod' || isAnswersModule(resolved(file, specifier)),
    );
    expect(imports.length).toBeGreaterThan(10); // the walk found them
    expect(imports.filter(({ typeOnly }) => !typeOnly).map(shown)).toEqual([]);
  });

  it("reads the server's types from answers modules alone, which reach zod and one another only", () => {
    const typeImports = serverImports().filter(
      ({ specifier, typeOnly }) => typeOnly && specifier !== 'zod',
    );
    expect(
      typeImports
        .filter(({ file, specifier }) => !isAnswersModule(resolved(file, specifier)))
        .map(shown),
    ).toEqual([]);
    const { files, strays } = reach(
      typeImports.map(({ file, specifier }) => resolved(file, specifier)),
    );
    expect(files.size).toBeGreaterThan(15); // the walk followed the answers modules
    expect(strays).toEqual([]);
  });

  it('finds a module that reaches further (the check can fail)', () => {
    const { strays } = reach([join(ROOT, 'src/routes/dashboard/webhooks/schema.ts')]);
    expect(strays).toContain('src/routes/dashboard/webhooks/schema.ts → src/db/pool.ts');
  });

  // The two fields added by hand on both sides before (decisions 513 and 531), and a count the
  // app page shows: renamed on the server, the pages that read them no longer compile.
  it("fails the dashboard's typecheck where a page reads a field the server renamed", () => {
    const errors = dashboardTypeErrors(['made-recently.tsx', 'pages/app.tsx'], {
      'src/routes/auth/answers.ts': [['review_after_reset:', 'review_after_password_reset:']],
      'src/routes/dashboard/made-recently-answers.ts': [['via_email:', 'through_email:']],
      'src/routes/dashboard/apps/answers.ts': [['connections: z.number()', 'links: z.number()']],
    });
    expect(errors).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^web\/dashboard\/src\/made-recently\.tsx: .*'review_after_reset'/),
        expect.stringMatching(/^web\/dashboard\/src\/made-recently\.tsx: .*'via_email'/),
        expect.stringMatching(/^web\/dashboard\/src\/pages\/app\.tsx: .*'connections'/),
      ]),
    );
    // and only there: the unchanged answers compile as `npm run typecheck` has them
    expect(errors.every((error) => error.startsWith('web/dashboard/src/'))).toBe(true);
  }, 120_000);
});
