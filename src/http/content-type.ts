// The media type a request's Content-Type header declares, as the body parsers compare it,
// and the refusal of a body declared as another.
import { gwError, type GwError } from '../errors.js';

/**
 * The media type before any parameters (`; charset=…`), trimmed and lower-cased: '' for an
 * empty header, undefined when there is none (each parser decides what no header means).
 */
export function mediaTypeOf(contentType: string | undefined): string | undefined {
  return contentType?.split(';', 1)[0]!.trim().toLowerCase();
}

/** The 400 for a body whose media type (from mediaTypeOf) is not the one the route reads. */
export function wrongMediaType(expected: string, mediaType: string | undefined): GwError {
  return gwError(
    'gw_invalid_request',
    `content-type: must be ${expected} (the body was sent as ${mediaType || 'nothing'})`,
  );
}
