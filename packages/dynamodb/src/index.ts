/**
 * `@resumable/dynamodb`: under construction (see its issue).
 *
 * @packageDocumentation
 */
export {};
