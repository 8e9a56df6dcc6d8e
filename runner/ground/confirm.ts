/**
 * A yes/no question on the terminal before something is removed; with no
 * terminal to ask on, nothing is asked and nothing changes (the flag that
 * skips the question is named).
 */
import { createInterface } from "node:readline/promises";
import { RosterError } from "./errors.ts";

export async function confirm(question: string, flag: string): Promise<boolean> {
  if (!process.stdin.isTTY)
    throw new RosterError(
      `not in a terminal, so nothing was asked and nothing changed: add ${flag}`,
      { exitCode: 2 },
    );
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    return /^y(es)?$/i.test((await rl.question(`${question} [y/N] `)).trim());
  } finally {
    rl.close();
  }
}

/**
 * The question asked unless `yes` (the command's --yes) already answered it;
 * a "no" says that nothing changed. True when the removal may go ahead.
 */
export async function confirmedUnless(
  yes: boolean | undefined,
  question: string,
): Promise<boolean> {
  if (yes) return true;
  if (await confirm(question, "--yes")) return true;
  process.stdout.write("nothing changed\n");
  return false;
}
