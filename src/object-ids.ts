// The form of an id the gateway issues (a type prefix and base62, src/ids.ts newId; an OAuth
// client id): 1 to 64 letters, digits, `_` or `-`. A text of another form names no object, so
// it is not looked up. No imports: the dashboard's bundle checks addresses by it too.

/** 1 to 64 letters, digits, `_` or `-`. */
export const OBJECT_ID_FORM = /^[\w-]{1,64}$/;

/** Can the text be an id the gateway issued? */
export const isObjectIdForm = (text: string): boolean => OBJECT_ID_FORM.test(text);
