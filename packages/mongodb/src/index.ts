/**
 * `@resumable/mongodb`: under construction (see its issue).
 *
 * @packageDocumentation
 */
export {};
