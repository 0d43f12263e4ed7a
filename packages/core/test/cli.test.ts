import { describe, expect, it } from "vitest";

import { parseCommandLine, type CliOutput } from "../src/index.js";

function capture(): CliOutput & { lines: { out: string[]; err: string[] } } {
  const lines = { out: [] as string[], err: [] as string[] };
  return { lines, out: (line) => lines.out.push(line), err: (line) => lines.err.push(line) };
}

const spec = { program: "tool", usage: "Usage: tool <go|stop>", commands: ["go", "stop"], options: { name: { type: "string" }, fast: { type: "boolean" } } } as const;

describe("parseCommandLine", () => {
  it("answers no command with the usage on stderr (2), and help in every spelling with the usage on stdout (0)", () => {
    const none = capture();
    expect(parseCommandLine([], spec, none)).toBe(2);
    expect(none.lines).toEqual({ out: [], err: ["Usage: tool <go|stop>"] });
    for (const argv of [["help"], ["--help"], ["-h"], ["go", "--help"], ["stop", "-h"]]) {
      const output = capture();
      expect(parseCommandLine(argv, spec, output)).toBe(0);
      expect(output.lines).toEqual({ out: ["Usage: tool <go|stop>"], err: [] });
    }
  });

  it("refuses an unknown command and an unknown or malformed option, naming it, with the usage (2)", () => {
    const unknown = capture();
    expect(parseCommandLine(["fly"], spec, unknown)).toBe(2);
    expect(unknown.lines.err[0]).toMatch(/^tool: unknown command "fly"\n\nUsage: tool/);
    const option = capture();
    expect(parseCommandLine(["go", "--colour", "red"], spec, option)).toBe(2);
    expect(option.lines.err[0]).toMatch(/^tool: .*--colour.*\n\nUsage: tool/s);
    const missing = capture();
    expect(parseCommandLine(["go", "--name"], spec, missing)).toBe(2);
    expect(missing.lines.err[0]).toMatch(/^tool: .*--name/);
  });

  it("returns the command, its typed option values and its positionals", () => {
    const output = capture();
    const line = parseCommandLine(["go", "a", "--name", "x", "b", "--fast"], spec, output);
    expect(line).toEqual({ command: "go", values: { name: "x", fast: true }, positionals: ["a", "b"] });
    expect(output.lines).toEqual({ out: [], err: [] });
  });
});
