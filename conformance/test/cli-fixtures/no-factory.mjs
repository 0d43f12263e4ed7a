// A module without a factory: the CLI must say what it expected and exit 2.
export const answer = 42;
