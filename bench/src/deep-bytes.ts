/**
 * Logical size of an in-memory saver: the bytes of every string, byte array and number it holds,
 * keys included. A proxy for what the same records would cost as rows, not the V8 heap footprint.
 *
 * @module
 */

/** Sums the payload bytes reachable from `root`, counting each object once. */
export function deepBytes(root: unknown): number {
  const seen = new WeakSet<object>();
  let total = 0;
  const stack: unknown[] = [root];
  while (stack.length > 0) {
    const value = stack.pop();
    if (value === null || value === undefined) continue;
    switch (typeof value) {
      case "string":
        total += Buffer.byteLength(value, "utf8");
        continue;
      case "number":
      case "bigint":
        total += 8;
        continue;
      case "boolean":
        total += 1;
        continue;
      case "object":
        break;
      default:
        continue;
    }
    const object = value as object;
    if (seen.has(object)) continue;
    seen.add(object);
    if (ArrayBuffer.isView(object)) {
      total += object.byteLength;
    } else if (object instanceof ArrayBuffer) {
      total += object.byteLength;
    } else if (object instanceof Map) {
      for (const [key, entry] of object) stack.push(key, entry);
    } else if (object instanceof Set) {
      for (const entry of object) stack.push(entry);
    } else if (Array.isArray(object)) {
      for (const entry of object) stack.push(entry);
    } else {
      for (const key of Object.keys(object)) {
        total += Buffer.byteLength(key, "utf8");
        stack.push((object as Record<string, unknown>)[key]);
      }
    }
  }
  return total;
}
