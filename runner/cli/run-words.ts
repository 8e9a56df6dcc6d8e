import type { RunFlags } from "./does/run.ts";

/**
 * `roster run`'s words read without the command tree, for the handed path
 * (handed-run.ts): commander and every command's declaration cost a run
 * handed to a server about 70 ms of its start. Only the plain forms are read
 * here; anything else (help, --local, an unknown or misspelled flag, `--`, a
 * missing argument) is left to the tree, which says what is wrong with it.
 * commands/run.ts declares the same flags with the same default, and a test
 * holds the two readings equal (test/unit/handed-run.test.ts).
 */
export interface RunWords {
  worker: string;
  words: string[];
  flags: RunFlags;
}

/** --ceiling's default, in minutes: the command tree's and this reading's. */
export const DEFAULT_CEILING = "30";

/** The words after `roster` (in our spelling) as a plain run, or undefined to leave them to the tree. */
export function plainRun(args: readonly string[]): RunWords | undefined {
  if (args[0] !== "run") return undefined;
  const positional: string[] = [];
  let ceiling = DEFAULT_CEILING;
  let json = false;
  for (let i = 1; i < args.length; i++) {
    const word = args[i] ?? "";
    if (word === "--json") json = true;
    else if (word === "--ceiling") {
      const value = args[i + 1];
      if (value === undefined || value === "" || value.startsWith("-")) return undefined;
      ceiling = value;
      i++;
    } else if (word.startsWith("--ceiling=")) {
      const value = word.slice("--ceiling=".length);
      if (!value) return undefined;
      ceiling = value;
    } else if (word.startsWith("-")) return undefined;
    else positional.push(word);
  }
  const [worker, ...words] = positional;
  if (worker === undefined || words.length === 0) return undefined;
  return { worker, words, flags: { ceiling, ...(json ? { json } : {}) } };
}
