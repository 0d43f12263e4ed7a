/**
 * `@resumable/redis`: under construction (see its issue).
 *
 * @packageDocumentation
 */
export {};
