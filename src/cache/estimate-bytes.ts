// A rough, deterministic estimate of the heap a cached value holds, so caches can be bounded
// by bytes as well as entries. It over-counts a little (per-object overheads) on purpose: a
// byte bound exists to stop a cache that holds a few huge values from growing without limit.
const OBJECT_OVERHEAD_BYTES = 32;
const SLOT_BYTES = 8;

export function estimateBytes(value: unknown): number {
  return estimate(value, 0);
}

function estimate(value: unknown, depth: number): number {
  if (value === null || value === undefined) return SLOT_BYTES;
  switch (typeof value) {
    case 'string':
      return OBJECT_OVERHEAD_BYTES / 2 + value.length * 2;
    case 'number':
    case 'boolean':
      return SLOT_BYTES;
    case 'bigint':
      return OBJECT_OVERHEAD_BYTES / 2 + SLOT_BYTES;
    case 'object':
      break;
    default:
      return SLOT_BYTES;
  }
  // Cached values are plain data a few levels deep; anything deeper is counted flat.
  if (depth > 32) return OBJECT_OVERHEAD_BYTES;
  if (value instanceof Date) return OBJECT_OVERHEAD_BYTES;
  if (Buffer.isBuffer(value)) return OBJECT_OVERHEAD_BYTES + value.byteLength;
  let total = OBJECT_OVERHEAD_BYTES;
  if (Array.isArray(value) || value instanceof Set) {
    for (const item of value as Iterable<unknown>) total += SLOT_BYTES + estimate(item, depth + 1);
    return total;
  }
  if (value instanceof Map) {
    for (const [key, item] of value as Map<unknown, unknown>) {
      total += SLOT_BYTES * 2 + estimate(key, depth + 1) + estimate(item, depth + 1);
    }
    return total;
  }
  for (const [key, item] of Object.entries(value)) {
    total += SLOT_BYTES + estimate(key, depth + 1) + estimate(item, depth + 1);
  }
  return total;
}
