import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { applyConfigEdit } from "../../runner/boundary/gateway/policy/config-edit.ts";

/**
 * An edit roster makes to the operator's config (an approved access request,
 * a rollback) is written only when the config it makes loads and passes its
 * own `[[test]]` cases; a refused one writes nothing and says why with the
 * live config's file and line.
 */

const ORG = `[[grant]]
name = "github-read"
verdict = "allow"
match = { host = "api.github.com", method = ["GET"] }

[[test]]
request = "GET https://api.github.com/user"
worker = "elf"
expect = "allow"
`;

const GRANT = `
[[grant]]
name = "docs-read"
verdict = "allow"
match = { host = "docs.example.com", method = ["GET"] }
`;

let root: string;
let config: string;
const org = () => join(config, "org.toml");

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), "roster-config-edit-test-"));
  config = join(root, "config");
  mkdirSync(join(config, "workers", "elf"), { recursive: true });
  writeFileSync(org(), ORG, { mode: 0o640 });
  writeFileSync(join(config, "workers", "elf", "worker.toml"), 'name = "elf"\n');
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

describe("a vetted config edit", () => {
  it("writes an edit whose config loads and passes its tests, keeping the file's mode", async () => {
    const outcome = await applyConfigEdit(config, (current) => [
      { file: "org.toml", text: `${current("org.toml") ?? ""}${GRANT}` },
    ]);
    expect(outcome).toEqual({ ok: true, written: ["org.toml"] });
    expect(readFileSync(org(), "utf8")).toBe(`${ORG}${GRANT}`);
    expect(statSync(org()).mode & 0o777).toBe(0o640);
  });

  it("refuses an edit that breaks the TOML, naming the live file and line, and writes nothing", async () => {
    const outcome = await applyConfigEdit(config, (current) => [
      { file: "org.toml", text: `${current("org.toml") ?? ""}\n[[grant]\nname = 1\n` },
    ]);
    expect(outcome.ok).toBe(false);
    expect(outcome.ok ? [] : outcome.problems).toEqual([
      expect.stringMatching(new RegExp(`^${org().replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}:\\d+: `)),
    ]);
    expect(readFileSync(org(), "utf8")).toBe(ORG);
  });

  it("refuses an edit whose config fails one of its [[test]] cases, naming the case", async () => {
    const outcome = await applyConfigEdit(config, (current) => [
      {
        file: "org.toml",
        text: (current("org.toml") ?? "").replace('method = ["GET"]', 'method = ["POST"]'),
      },
    ]);
    const problems = outcome.ok ? [] : outcome.problems;
    expect(problems).toHaveLength(1);
    expect(problems[0]).toContain("test.0: GET https://api.github.com/user (worker elf)");
    expect(problems[0]).toContain("expected allow");
    expect(readFileSync(org(), "utf8")).toBe(ORG);
  });

  it("refuses a path outside the config or a file that is not TOML", async () => {
    for (const file of ["../escape.toml", "/etc/passwd.toml", "workers/elf/identity.md"]) {
      const outcome = await applyConfigEdit(config, () => [{ file, text: "x = 1\n" }]);
      expect(outcome.ok, file).toBe(false);
    }
    expect(() => statSync(join(root, "escape.toml"))).toThrow();
  });
});
