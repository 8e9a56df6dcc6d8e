import { execFileSync, spawnSync } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SHELLS } from "../../runner/cli/completion.ts";
import { buildProgram } from "../../runner/cli/main.ts";
import { runRoster } from "../support/cli.ts";

/**
 * `roster completion <shell>` through the real CLI: each script names every
 * command help shows, the shells accept it, and bash completes from it.
 * zsh and fish are checked where they are installed; in CI (which installs
 * them) a missing shell fails rather than passing unchecked.
 */
function hasShell(shell: string): boolean {
  const found = spawnSync(shell, ["-c", "true"]).status === 0;
  if (!found && process.env.CI === "true")
    throw new Error(`${shell} is not installed; CI checks every completion script with its shell`);
  return found;
}
const program = buildProgram();
const visibleTopLevel = program
  .createHelp()
  .visibleCommands(program)
  .map((command) => command.name());

let dir = "";
const scripts: Record<string, string> = {};
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "roster-completion-"));
  for (const shell of SHELLS) {
    const result = await runRoster(["completion", shell]);
    expect(result.code).toBe(0);
    scripts[shell] = result.stdout;
    await writeFile(join(dir, shell), result.stdout);
  }
});
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe("roster completion", () => {
  it.each(SHELLS)("the %s script names every top-level command", (shell) => {
    expect(visibleTopLevel.length).toBeGreaterThan(10);
    for (const name of visibleTopLevel) expect(scripts[shell]).toMatch(new RegExp(`\\b${name}\\b`));
    // hidden commands stay hidden
    expect(scripts[shell]).not.toMatch(/\blistener\b/);
  });

  it.each(SHELLS)("%s accepts its script", (shell) => {
    if (!hasShell(shell)) return;
    const check = spawnSync(shell, ["-n", join(dir, shell)], { encoding: "utf8" });
    expect(check.stderr).toBe("");
    expect(check.status).toBe(0);
  });

  it("bash completes commands, subcommands and options from it", () => {
    const complete = (...words: string[]) =>
      execFileSync(
        "bash",
        [
          "-c",
          `source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 )); _roster; printf '%s\\n' "\${COMPREPLY[@]}"`,
          "complete",
          join(dir, "bash"),
          ...words,
        ],
        { encoding: "utf8" },
      )
        .split("\n")
        .filter(Boolean);
    expect(complete("roster", "wor")).toEqual(["worker"]);
    expect(complete("roster", "worker", "")).toEqual(
      expect.arrayContaining(["add", "ls", "show", "rm", "restore"]),
    );
    expect(complete("roster", "box", "build", "--w")).toEqual(["--worker"]);
    expect(complete("roster", "task", "ls", "--")).toEqual(["--json", "--help"]);
  });

  it("fish completes from it", () => {
    if (!hasShell("fish")) return;
    const out = execFileSync(
      "fish",
      ["-c", `source ${join(dir, "fish")}; complete -C "roster worker "`],
      { encoding: "utf8" },
    );
    expect(out).toMatch(/^add\t/m);
    expect(out).toMatch(/^rm\t/m);
  });

  it("refuses a shell it has no script for, in one line", async () => {
    const result = await runRoster(["completion", "tcsh"]);
    expect(result.code).toBe(2);
    expect(result.stderr.trim()).toBe(
      'roster: no completion for the shell "tcsh": bash, zsh, fish',
    );
    expect(result.stdout).toBe("");
  });
});
