import { describe, expect, it } from "vitest";
import { ALIASES, resolveCommand } from "../../runner/cli/aliases.ts";
import { buildProgram } from "../../runner/cli/main.ts";
import { runRoster } from "../support/cli.ts";

/**
 * The public roster's spellings reach our commands: for every alias, the
 * command it resolves to is the very object ours resolves to, and through the
 * real CLI its help is ours, word for word. Help never shows the aliases.
 */
const path = (words: readonly string[]) => words.join(" ");

describe("the public roster's spellings", () => {
  it.each(ALIASES.map((alias) => [path(alias.spelled), path(alias.ours), alias] as const))(
    "`roster %s` is `roster %s`",
    async (_spelled, _ours, alias) => {
      const program = buildProgram();
      const ours = resolveCommand(program, alias.ours);
      // ours names a real command, all the way down
      expect(ours.name()).toBe(alias.ours.at(-1));
      expect(resolveCommand(program, [...alias.spelled, "x"])).toBe(
        resolveCommand(program, [...alias.ours, "x"]),
      );
      expect(resolveCommand(program, alias.spelled)).toBe(ours);

      const [viaAlias, viaOurs] = await Promise.all([
        runRoster([...alias.spelled, "--help"]),
        runRoster([...alias.ours, "--help"]),
      ]);
      expect(viaOurs.code).toBe(0);
      expect(viaAlias).toEqual(viaOurs);
    },
  );

  it("help shows ours only", async () => {
    const [server, worker, top] = await Promise.all([
      runRoster(["server", "--help"]),
      runRoster(["worker", "--help"]),
      runRoster(["--help"]),
    ]);
    expect(server.stdout).not.toMatch(/^\s+(approvals|runs)\b/m);
    expect(worker.stdout).not.toMatch(/^\s+(run|task|trust|init)\b/m);
    expect(worker.stdout).toMatch(/^\s+add\b/m);
    expect(top.stdout).not.toMatch(/^\s+completions\b/m);
    expect(top.stdout).toMatch(/^\s+completion\b/m);
  });

  it("an alias takes our options and arguments: `worker run` refuses a bad ceiling as `run` does", async () => {
    const args = ["elf", "hello", "--ceiling", "0"];
    const [viaAlias, viaOurs] = await Promise.all([
      runRoster(["worker", "run", ...args], { ROSTER_ROOT: "/nonexistent/roster-alias-test" }),
      runRoster(["run", ...args], { ROSTER_ROOT: "/nonexistent/roster-alias-test" }),
    ]);
    expect(viaOurs.code).toBe(2);
    expect(viaAlias).toEqual(viaOurs);
  });
});
