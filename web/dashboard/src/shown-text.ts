// Text the organization does not choose (a product user's external id and name, sent by its
// app's end users) shown as it is, except for the Unicode bidirectional controls that would
// reorder it on screen ("bidi\u202Eevil" displays as "bidilive"): each is shown as a visible
// mark instead. The dashboard's own names refuse the same set (src/text.ts, decision 311). No
// DOM: tested without a browser.

import { BIDI_CONTROL } from '../../../src/text.js';

const EVERY_BIDI_CONTROL = new RegExp(BIDI_CONTROL.source, 'g');

/** `text` with each bidirectional control written as a mark (`‹U+202E›`). */
export const shownText = (text: string): string =>
  text.replace(
    EVERY_BIDI_CONTROL,
    (control) => `‹U+${control.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}›`,
  );
