import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { PROJECT_ROOT } from "../../runner/ground/version.ts";
import { runRoster } from "../support/cli.ts";

const roster = runRoster;

describe("the roster command", () => {
  it("prints its version", async () => {
    const pkg = JSON.parse(readFileSync(join(PROJECT_ROOT, "package.json"), "utf8")) as {
      version: string;
    };
    const result = await roster(["--version"]);
    expect(result.code).toBe(0);
    // the release, the commit of the checkout it runs from (public-cli.test.ts checks which)
    // and the Node it runs on (host-node.test.ts checks which)
    expect(result.stdout.trim()).toMatch(
      new RegExp(
        `^${pkg.version.replaceAll(".", "\\.")} \\([0-9a-f]{7,}(\\+dirty)?\\) on Node v\\d+\\.\\d+\\.\\d+ \\(.+\\)$`,
      ),
    );
  });

  it.each([
    ["box", "build"],
    ["box", "doctor"],
  ])(
    "`roster %s %s` names the socket and how to start Docker when it is unreachable",
    async (...args) => {
      const result = await roster(args, { DOCKER_HOST: "unix:///nonexistent/roster-test.sock" });
      expect(result.code).toBe(1);
      const output = `${result.stderr}${result.stdout}`.trim();
      expect(output).toContain("/nonexistent/roster-test.sock");
      expect(output).toMatch(/start it with `sudo dockerd &`/);
      expect(output.split("\n")).toHaveLength(1);
    },
  );

  it("refuses an unknown command with a usage error", async () => {
    const result = await roster(["frobnicate"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("unknown command 'frobnicate'");
  });
});
