// Which usage stream entries this version can write in full. gw is upgraded by rolling deploy:
// for a while writers of the old version drain entries that gateways of the new one settled.
// A writer that wrote such a record without the fields it does not read would lose them for
// good (the prompt-cache parts and web searches were lost so when 048-050 added them), so a
// writer leaves an entry naming anything it does not know pending, unacknowledged, for a writer
// of a newer version (usage-writer.ts; decision 333). No version number to forget to bump: the
// names the readers read are the list (USAGE_RECORD_FIELDS, USAGE_NOTICE_FIELDS).
import { isNoticeEntry, NOTICE_TYPES, USAGE_NOTICE_FIELDS } from './usage-notices.js';
import { USAGE_RECORD_FIELDS } from './usage-record.js';

/** A notice's field as a name (apart from the record's: a record's `at_ms` is not known). */
const noticeFieldName = (field: string): string => `notice.${field}`;
/** A notice type as a name (a new type of a newer version is unknown like a new field). */
const noticeTypeName = (type: string): string => `event=${type}`;

/** What this version knows: its record and notice field names, and its notice types. */
export const KNOWN_ENTRY_NAMES: ReadonlySet<string> = new Set([
  ...USAGE_RECORD_FIELDS,
  ...USAGE_NOTICE_FIELDS.map(noticeFieldName),
  ...[...NOTICE_TYPES].map(noticeTypeName),
]);

/** Names longer than this are cut in what is reported (an entry's names are not bounded). */
const NAME_SHOWN_CHARS = 64;

/**
 * The names of `fields` that `known` lacks; none when a writer knowing `known` can write the
 * entry whole. The names inside a packed record count as the entry's own. A packed value that
 * is not text (the reader takes text only) is reported as `name:type`, which no version
 * knows: it waits rather than be read as absent. An entry that cannot be read at all (packed
 * JSON that does not parse) has no unknown name here: the reader refuses it.
 */
export function unknownEntryNames(
  fields: readonly string[],
  known: ReadonlySet<string> = KNOWN_ENTRY_NAMES,
): string[] {
  const unknown = new Set<string>();
  const check = (name: string): void => {
    if (!known.has(name)) unknown.add(name.slice(0, NAME_SHOWN_CHARS));
  };
  if (isNoticeEntry(fields)) {
    for (let index = 0; index < fields.length; index += 2) check(noticeFieldName(fields[index]!));
    check(noticeTypeName(fields[1] ?? ''));
  } else {
    for (let index = 0; index < fields.length; index += 2) check(fields[index]!);
    for (const [name, value] of Object.entries(packedRecord(fields))) {
      if (typeof value === 'string') check(name);
      else
        unknown.add(`${name.slice(0, NAME_SHOWN_CHARS)}:${value === null ? 'null' : typeof value}`);
    }
  }
  return [...unknown].sort();
}

/** The packed `record` field's object; empty when there is none or it is not an object. */
function packedRecord(fields: readonly string[]): Record<string, unknown> {
  for (let index = 0; index + 1 < fields.length; index += 2) {
    if (fields[index] !== 'record') continue;
    try {
      const values: unknown = JSON.parse(fields[index + 1]!);
      return typeof values === 'object' && values !== null && !Array.isArray(values)
        ? (values as Record<string, unknown>)
        : {};
    } catch {
      return {};
    }
  }
  return {};
}
