/**
 * Metadata filters of `list()`: checked once in core and handed to stores in canonical form, so that
 * every store compares the same thing (a `Date` is its ISO string everywhere, an own `__proto__` key
 * is a key like any other) and a filter that cannot mean anything is refused instead of ignored.
 *
 * @module
 */
import { InvalidConfigError } from "./errors.js";
import { MAX_VALUE_DEPTH } from "./json-plus.js";
import { canonicalJson, defineKey } from "./serialization.js";

/** The most keys one filter may have; far beyond any real filter, well within every store's query limits. */
export const MAX_FILTER_KEYS = 100;

/**
 * Validates a `list()` filter and returns it as canonical JSON (see {@link canonicalJson}), or
 * `undefined` when there is nothing to filter on. Keys whose value is `undefined` stay: they match
 * checkpoints whose metadata lacks the key, as LangGraph's `MemorySaver` does.
 */
export function canonicalFilter(filter: unknown): Record<string, unknown> | undefined {
  if (filter === undefined || filter === null) return undefined;
  if (typeof filter !== "object" || Array.isArray(filter)) {
    throw new InvalidConfigError(
      "filter",
      `list(): "filter" must be an object of metadata keys to values, e.g. { source: "loop" }; got ${Array.isArray(filter) ? "an array" : typeof filter}.`,
    );
  }
  const keys = Object.keys(filter);
  if (keys.length === 0) return undefined;
  if (keys.length > MAX_FILTER_KEYS) {
    throw new InvalidConfigError("filter", `list(): the filter has ${keys.length} keys, over the limit of ${MAX_FILTER_KEYS}.`);
  }
  const out: Record<string, unknown> = {};
  for (const key of keys) {
    const value = (filter as Record<string, unknown>)[key];
    checkFilterValue(value, key);
    defineKey(out, key, value === undefined ? undefined : canonicalJson(value));
  }
  return out;
}

function checkFilterValue(root: unknown, key: string): void {
  const open = new Set<object>();
  const visit = (value: unknown, path: string, depth: number): void => {
    const fail = (reason: string): never => {
      throw new InvalidConfigError(`filter.${key}`, `list(): the filter value at ${path} ${reason}, so it could never match stored metadata.`);
    };
    switch (typeof value) {
      case "function":
        return fail("is a function");
      case "symbol":
        return fail("is a symbol");
      case "bigint":
        return fail(`is a bigint (${String(value)}n), which metadata cannot hold`);
      case "number":
        if (!Number.isFinite(value)) fail(`is ${String(value)}, which metadata cannot hold`);
        return;
      case "object":
        break;
      default:
        return;
    }
    if (value === null) return;
    if (depth > MAX_VALUE_DEPTH) fail(`is nested more than ${MAX_VALUE_DEPTH} levels deep`);
    if (open.has(value)) fail("contains a reference cycle");
    let view: unknown = value;
    if (typeof (value as { toJSON?: unknown }).toJSON === "function") {
      try {
        view = (value as { toJSON(): unknown }).toJSON();
      } catch (error) {
        fail(`has a toJSON() that throws (${error instanceof Error ? error.message : String(error)})`);
      }
      if (view !== value) return visit(view, path, depth);
    }
    open.add(value);
    try {
      for (const [k, child] of Object.entries(value)) {
        if (child === undefined && !Array.isArray(value)) continue;
        visit(child, `${path}${Array.isArray(value) ? `[${k}]` : `[${JSON.stringify(k)}]`}`, depth + 1);
      }
    } finally {
      open.delete(value);
    }
  };
  visit(root, `[${JSON.stringify(key)}]`, 0);
}
