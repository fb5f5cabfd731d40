// The shapes of a parsed JSON value, as type guards: an object (not null, not an array) and a
// container (an object or an array: what a walk of a JSON document descends into). A file of
// its own at the top of src/ so every folder may import it without tying two folders together.

/** A JSON object: its members by name. */
export type JsonObject = Record<string, unknown>;

/** Whether `value` is a JSON object: an object that is neither null nor an array. */
export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Whether `value` is a JSON container: an object or an array, not null. */
export function isJsonContainer(value: unknown): value is object {
  return typeof value === 'object' && value !== null;
}
