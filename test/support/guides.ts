// The documents a user reads: README.md and the guides in docs/ (the decisions log records
// history, not usage). Tests that hold the docs to the code read them from here.
import { readdirSync, readFileSync } from 'node:fs';

export function guides(): { name: string; text: string }[] {
  const docs = new URL('../../docs/', import.meta.url);
  return [
    { name: 'README.md', text: readFileSync(new URL('../../README.md', import.meta.url), 'utf8') },
    ...readdirSync(docs)
      .filter((file) => file.endsWith('.md') && file !== 'decisions.md')
      .map((file) => ({ name: `docs/${file}`, text: readFileSync(new URL(file, docs), 'utf8') })),
  ];
}
