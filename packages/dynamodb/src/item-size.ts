/**
 * Item sizes as DynamoDB counts them against its 400 KB limit: every attribute's name plus its value.
 *
 * @module
 */
import type { AttributeValue } from "@aws-sdk/client-dynamodb";

/** An item as this package writes it: strings, binaries and numbers only. */
export type Item = Record<string, AttributeValue>;

/**
 * The largest item DynamoDB stores, as documented: 400 KB counting attribute names and values.
 * AWS and dynalite 4 accept up to 409,600 bytes, moto 5.2.5 up to 405,000 (both measured); this
 * package stays at 400,000 by default so that an item that fits here fits everywhere.
 */
export const DYNAMODB_ITEM_LIMIT = 409_600;

/** The default item budget of the store: 400,000 bytes (see {@link DYNAMODB_ITEM_LIMIT}). */
export const DEFAULT_MAX_ITEM_BYTES = 400_000;

/**
 * Bytes a number may take: DynamoDB stores up to 38 significant digits at about one byte per two,
 * plus one; 21 bounds every number it accepts.
 */
const NUMBER_BYTES = 21;

/** UTF-8 length of a string. */
export function utf8Bytes(s: string): number {
  return Buffer.byteLength(s, "utf8");
}

/**
 * The size of an item as DynamoDB counts it: for each attribute, the UTF-8 bytes of its name plus
 * its value (a string's UTF-8 bytes, a binary's bytes, a number at its largest, 21). dynalite
 * counts a string's UTF-16 code units instead (fewer for non-ASCII text), so this is never below
 * what either emulator or AWS counts.
 */
export function itemSize(item: Item): number {
  let size = 0;
  for (const [name, value] of Object.entries(item)) size += utf8Bytes(name) + valueSize(value);
  return size;
}

function valueSize(value: AttributeValue): number {
  if (value.S !== undefined) return utf8Bytes(value.S);
  if (value.B !== undefined) return value.B.byteLength;
  if (value.N !== undefined) return NUMBER_BYTES;
  throw new TypeError(`itemSize: unsupported attribute type ${Object.keys(value).join(", ")}`);
}
