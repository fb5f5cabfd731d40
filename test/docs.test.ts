// The error catalogue page lists every code with the status the gateway really answers,
// docs/operations.md has an alert for each fault, README's configuration table is the
// variables src/config.ts reads with the defaults it gives them, and every `gw` command the
// guides show is one the CLI has, with its actions and flags.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { withCliIo } from '../src/cli/io.js';
import { runCli } from '../src/cli/main.js';
import { configSchema } from '../src/config.js';
import { errorCatalogue } from '../src/errors.js';
import { guides } from './support/guides.js';

describe('docs/errors.md', () => {
  const page = readFileSync(new URL('../docs/errors.md', import.meta.url), 'utf8');
  it.each(Object.entries(errorCatalogue))('lists %s with its status', (code, { status }) => {
    expect(page).toContain(`| ${status} | \`${code}\` |`);
  });
});

describe('/openapi.json', () => {
  it('lists the routes and, for each, the error codes with the statuses the gateway answers', async () => {
    const { buildOpenApiDocument } = await import('../src/openapi/document.js');
    const { routeDeclarations } = await import('../src/routes/index.js');
    const document = buildOpenApiDocument(routeDeclarations) as {
      paths: Record<string, Record<string, { responses: Record<string, { description: string }> }>>;
    };
    expect(Object.keys(document.paths)).toEqual(
      expect.arrayContaining([
        '/v1/chat/completions',
        '/v1/messages',
        '/v1/messages/count_tokens',
        '/v1/models',
        '/inference-keys/usage',
        '/product-users/by-external-id',
        '/product-users/by-external-id/credit-summary',
        '/product-users/by-external-id/credit-grants',
      ]),
    );
    const chat = document.paths['/v1/chat/completions']!.post!.responses;
    for (const code of [
      'gw_malformed_or_missing_key',
      'gw_unknown_key',
      'gw_key_inactive',
      'gw_model_not_allowed',
      'gw_unsupported_model',
    ] as const) {
      expect(chat[String(errorCatalogue[code].status)]!.description).toContain(code);
    }
  });
});

describe('docs/operations.md alerts', () => {
  const page = readFileSync(new URL('../docs/operations.md', import.meta.url), 'utf8');
  const alerts = page.slice(page.indexOf('\n## Alerts'));

  // That each names metrics a running gateway serves, read the way they are:
  // test/operations-docs.e2e.test.ts.
  it('has an alert for every fault issue 16 lists', () => {
    expect(alerts.length).toBeGreaterThan(100);
    for (const fault of [
      'Postgres down',
      'Redis down or restarted',
      'A vendor hanging or trickling',
      'SIGTERM drain exceeding the grace',
      'Reconcile drift',
      'Dead letters',
      'Webhook backlog',
      'Redis Cluster shard away',
    ]) {
      expect(alerts).toContain(`**${fault}**`);
    }
  });
});

describe('the configuration table of README.md', () => {
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
  const table = readme.slice(
    readme.indexOf('\n## Configuration'),
    readme.indexOf('\n## Endpoints'),
  );
  const documented = [...table.matchAll(/^\| `([A-Z][A-Z0-9_]*)` \|/gm)].map((match) => match[1]);

  it('lists every variable the gateway reads, and only those', () => {
    expect(documented.length).toBeGreaterThan(40);
    expect([...documented].sort()).toEqual(Object.keys(configSchema.shape).sort());
  });

  it('with the default the gateway takes when it is unset', () => {
    const defaults: Record<string, unknown> = configSchema.parse({});
    const problems: string[] = [];
    for (const [, name, cell] of table.matchAll(/^\| `([A-Z][A-Z0-9_]*)` \| ([^|]*) \|/gm)) {
      // The cell's first code span (`0` (off)), or — / *(unset)* for none; `…` ends a list
      // written in part.
      const written = /`([^`]*)`/.exec(cell!)?.[1];
      const actual = defaults[name!];
      const taken =
        actual === undefined || (Array.isArray(actual) && actual.length === 0)
          ? undefined
          : Array.isArray(actual)
            ? actual.join(',')
            : String(actual);
      const agrees =
        written === undefined
          ? taken === undefined || taken === ''
          : written.endsWith('…')
            ? taken?.startsWith(written.slice(0, -1)) === true
            : taken === written;
      if (!agrees)
        problems.push(`${name!}: README says ${cell!.trim()}, the gateway takes ${taken}`);
    }
    expect(problems).toEqual([]);
  });
});

describe('the gw commands the guides show', () => {
  /**
   * The `gw …` commands in code: a code line or an inline code span that starts with `gw` or
   * `npx gw` (or runs one in `$(…)`), up to a comment, a shell pipe or a closing `)` or `"`
   * (`grant|revoke` names two actions).
   */
  function commandsShown(text: string): string[] {
    const blocks = [...text.matchAll(/```[a-z]*\n([\s\S]*?)```/g)].map((match) => match[1]!);
    const inline = [...text.replace(/```[\s\S]*?```/g, '').matchAll(/`([^`]+)`/g)];
    const snippets = [
      // A command broken over lines with a trailing backslash is one command.
      ...blocks.flatMap((block) => block.replace(/\\\n\s*/g, ' ').split('\n')),
      ...inline.map((match) => match[1]!.replace(/\s+/g, ' ')),
    ];
    return snippets.flatMap((snippet) =>
      [...snippet.trim().matchAll(/(?:^|npx |\$\()(gw [a-z](?:(?! \| )[^#)"])*)/g)].map((match) =>
        match[1]!.trim(),
      ),
    );
  }
  // Log lines the guides quote, which are not commands.
  const logLines = new Set(['gw listening', 'gw workers listening', 'gw failed to start']);

  it('are commands, actions and flags `gw --help` describes', async () => {
    let help = '';
    await withCliIo(
      {
        env: process.env,
        write: (_stream, text) => void (help += text),
        inputIsTerminal: false,
        readInput: () => Promise.resolve(''),
        askSecret: () => Promise.reject(new Error('no terminal')),
      },
      () => runCli(['--help']),
    );
    // Each command's part of the help: from its first `gw <command>` line to the next command's.
    const sections = new Map<string, string>();
    let current = '';
    for (const line of help.split('\n')) {
      const command = /^gw ([a-z-]+)/.exec(line)?.[1];
      if (command) current = command;
      if (current) sections.set(current, `${sections.get(current) ?? ''}${line}\n`);
    }
    const problems: string[] = [];
    let checked = 0;
    for (const { name, text } of guides()) {
      for (const shown of commandsShown(text)) {
        if (logLines.has(shown)) continue;
        checked += 1;
        const [, command = '', action] = shown.split(/\s+/);
        const section = sections.get(command);
        if (section === undefined) {
          problems.push(`${name}: \`${shown}\`: no command ${command}`);
          continue;
        }
        if (action !== undefined && /^[a-z][a-z|-]*$/.test(action)) {
          for (const one of action.split('|')) {
            if (!new RegExp(`^gw ${command} (\\S*\\|)?${one}(\\||\\s|$)`, 'm').test(section))
              problems.push(`${name}: \`${shown}\`: gw ${command} has no action ${one}`);
          }
        }
        for (const [flag] of shown.matchAll(/--[a-z][a-z-]*/g)) {
          if (!new RegExp(`${flag}(?![a-z-])`).test(section))
            problems.push(`${name}: \`${shown}\`: gw ${command} takes no ${flag}`);
        }
      }
    }
    expect(checked).toBeGreaterThan(40);
    expect(problems).toEqual([]);
  });
});
