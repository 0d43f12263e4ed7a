/**
 * Metadata filters as SQL. Every key and value is a bound parameter: keys are matched with
 * `json_each(...).key` (never spliced into a JSON path, so quotes, dots, `$` and unicode in keys are
 * plain data), and values are compared the way core compares them, as canonical JSON.
 *
 * @module
 */
import { canonicalJsonText } from "@resumable/core";

/** A WHERE fragment over `c.metadata_json` and the named parameters it binds. */
export interface FilterSql {
  conditions: string[];
  params: Record<string, unknown>;
}

/**
 * Builds one condition per filter key. `metadata_json` holds canonical JSON (keys sorted at every
 * level), so a nested value matches when SQLite's rendering of the stored member equals its rendering
 * of the canonical filter value: both come from identical canonical text. Scalars are compared as SQL
 * values of the matching JSON type, so `1` never matches `"1"` and `true` never matches `1`.
 */
export function metadataFilterSql(filter: Record<string, unknown>, prefix = "f"): FilterSql {
  const conditions: string[] = [];
  const params: Record<string, unknown> = {};
  let i = 0;
  for (const [key, raw] of Object.entries(filter)) {
    const k = `${prefix}${i}k`;
    const v = `${prefix}${i}v`;
    i += 1;
    params[k] = key;
    const text = canonicalJsonText(raw);
    const member = `FROM json_each(c.metadata_json) AS m WHERE m.key = @${k}`;
    if (text === undefined) {
      // JSON drops undefined (and functions): such a filter matches records without the key, as core's check does.
      conditions.push(`NOT EXISTS (SELECT 1 ${member})`);
      continue;
    }
    const value: unknown = JSON.parse(text);
    if (value === null) {
      conditions.push(`EXISTS (SELECT 1 ${member} AND m.type = 'null')`);
    } else if (typeof value === "boolean") {
      conditions.push(`EXISTS (SELECT 1 ${member} AND m.type = '${value ? "true" : "false"}')`);
    } else if (typeof value === "number") {
      params[v] = value;
      conditions.push(`EXISTS (SELECT 1 ${member} AND m.type IN ('integer', 'real') AND m.value = @${v})`);
    } else if (typeof value === "string") {
      params[v] = value;
      conditions.push(`EXISTS (SELECT 1 ${member} AND m.type = 'text' AND m.value = @${v})`);
    } else {
      params[v] = text;
      const type = Array.isArray(value) ? "array" : "object";
      conditions.push(`EXISTS (SELECT 1 ${member} AND m.type = '${type}' AND m.value = json(@${v}))`);
    }
  }
  return { conditions, params };
}
