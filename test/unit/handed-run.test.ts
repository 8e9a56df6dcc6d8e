import { describe, expect, it } from "vitest";
import { ourSpelling } from "../../runner/cli/aliases.ts";
import { buildProgram } from "../../runner/cli/main.ts";
import { plainRun, type RunWords } from "../../runner/cli/run-words.ts";

/**
 * `roster run` handed to a server is read without the command tree
 * (runner/cli/run-words.ts): every form that reading takes must mean what the
 * tree means by it (the same worker, prompt and flags), and every form it
 * leaves must be one the tree answers itself (help, --local, a bad flag, a
 * missing argument). The tree's own `run` declaration is parsed here, its
 * action swapped for one that records what it was given.
 */
async function treeReading(args: string[]): Promise<RunWords | "refused"> {
  const program = buildProgram();
  program.configureOutput({ writeOut: () => undefined, writeErr: () => undefined });
  const run = program.commands.find((command) => command.name() === "run");
  if (!run) throw new Error("no run command in the tree");
  let seen: RunWords | undefined;
  run.action((worker: string, words: string[], flags: RunWords["flags"]) => {
    seen = { worker, words, flags: { ...flags } };
  });
  try {
    await program.parseAsync(["node", "roster", ...ourSpelling(args)]);
  } catch {
    return "refused";
  }
  return seen ?? "refused";
}

const TAKEN = [
  ["run", "elf", "say", "hello"],
  ["run", "--json", "elf", "hi"],
  ["run", "elf", "hi", "--json"],
  ["run", "--ceiling", "5", "elf", "a", "b"],
  ["run", "--ceiling=0.5", "elf", "hi"],
  ["run", "elf", "--ceiling", "2", "hi", "--ceiling", "3"],
  ["run", "elf", "weird ceiling", "--ceiling", "soon"],
  ["worker", "run", "elf", "hi"],
  ["run", "elf", ""],
];

const LEFT = [
  ["run"],
  ["run", "elf"],
  ["run", "--help"],
  ["run", "elf", "hi", "-h"],
  ["run", "--local", "elf", "hi"],
  ["run", "--jsn", "elf", "hi"],
  ["run", "elf", "--", "-5 apples"],
  ["run", "elf", "hi", "--ceiling"],
  ["run", "--ceiling=", "elf", "hi"],
  ["runs", "ls"],
  ["worker", "ls"],
];

describe("roster run read without the command tree", () => {
  it.each(TAKEN.map((args) => [args.join(" "), args]))(
    "`roster %s` reads as the tree reads it",
    async (_, args) => {
      const plain = plainRun(ourSpelling(args));
      expect(plain).toBeDefined();
      const tree = await treeReading(args);
      expect(tree).not.toBe("refused");
      expect({ ...plain, flags: { json: false, ...plain?.flags } }).toEqual({
        ...(tree as RunWords),
        flags: { json: false, ...(tree as RunWords).flags },
      });
    },
  );

  it.each(LEFT.map((args) => [args.join(" "), args]))(
    "`roster %s` is left to the tree",
    (_, args) => {
      expect(plainRun(ourSpelling(args))).toBeUndefined();
    },
  );
});
