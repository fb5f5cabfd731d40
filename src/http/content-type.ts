// The media type a request's Content-Type header declares, as the body parsers compare it.

/**
 * The media type before any parameters (`; charset=…`), trimmed and lower-cased: '' for an
 * empty header, undefined when there is none (each parser decides what no header means).
 */
export function mediaTypeOf(contentType: string | undefined): string | undefined {
  return contentType?.split(';', 1)[0]!.trim().toLowerCase();
}
