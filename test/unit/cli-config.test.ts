import { readFileSync, statSync } from "node:fs";
import { appendFile, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { PROJECT_ROOT } from "../../runner/ground/version.ts";
import { runRoster } from "../support/cli.ts";

const roots: string[] = [];
afterEach(async () => {
  for (const root of roots.splice(0)) await rm(root, { recursive: true, force: true });
});

/** The CLI against its own root, with no model key leaking in from the environment. */
function rosterIn(root: string, args: string[], env: NodeJS.ProcessEnv = {}) {
  return runRoster(args, { ANTHROPIC_API_KEY: "", OPENAI_API_KEY: "", ...env, ROSTER_ROOT: root });
}

async function freshRoot(): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), "roster-cli-"));
  roots.push(root);
  return root;
}

describe("roster init, validate and login", () => {
  it("init creates the roots with elf from the example, and never overwrites", async () => {
    const root = await freshRoot();
    const first = await rosterIn(root, ["init"]);
    expect(first.code).toBe(0);
    expect(first.stdout).toContain("config/workers/elf/identity.md");
    const org = join(root, "config/org.toml");
    expect(readFileSync(org, "utf8")).toBe(
      readFileSync(join(PROJECT_ROOT, "org.example.toml"), "utf8"),
    );
    await appendFile(org, "\n# edited by the operator\n");
    const second = await rosterIn(root, ["init"]);
    expect(second.stdout).toContain("already set up");
    expect(readFileSync(org, "utf8")).toContain("# edited by the operator");
    expect((await rosterIn(root, ["validate"])).stdout).toMatch(/config ok .* 1 worker\(s\)/);
  });

  it("validate names file, line and field, and exits 2", async () => {
    const root = await freshRoot();
    await rosterIn(root, ["init"]);
    await writeFile(
      join(root, "config/workers/elf/worker.toml"),
      'name = "elf"\n\n[[expose]]\ncredential = "github"\nenv = "HTTPS_PROXY"\n',
    );
    const result = await rosterIn(root, ["validate", "--json"]);
    expect(result.code).toBe(2);
    const report = JSON.parse(result.stdout) as {
      ok: boolean;
      errors: Array<{ file: string; line: number; field: string; message: string }>;
    };
    expect(report.ok).toBe(false);
    expect(report.errors).toEqual([
      expect.objectContaining({
        line: 5,
        field: "expose.0.env",
        message: "HTTPS_PROXY is reserved by the box contract; pick another name",
      }),
    ]);
  });

  it("login stores the key from the environment in the vault, 0600, and nowhere else", async () => {
    const root = await freshRoot();
    const result = await rosterIn(root, ["login", "anthropic"], {
      ANTHROPIC_API_KEY: "sk-test-123",
    });
    expect(result.code, result.stderr).toBe(0);
    const file = join(root, "data/vault/anthropic.json");
    expect(JSON.parse(readFileSync(file, "utf8"))).toEqual({ key: "sk-test-123" });
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(result.stdout).not.toContain("sk-test-123");
  });

  it("login --field stores a credential of several fields, and refuses a field without a name", async () => {
    const root = await freshRoot();
    const result = await rosterIn(root, [
      "login",
      "smtp",
      "--field",
      "host=mail.example.test",
      "--field",
      "port=465",
      "--field",
      "pass=a=b",
    ]);
    expect(result.code, result.stderr).toBe(0);
    const file = join(root, "data/vault/smtp.json");
    expect(JSON.parse(readFileSync(file, "utf8"))).toEqual({
      host: "mail.example.test",
      port: "465",
      pass: "a=b",
    });
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(result.stdout).not.toContain("a=b");
    const bad = await rosterIn(root, ["login", "smtp", "--field", "=x"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("--field =x: expected name=value");
  });

  it("login without a key and without a terminal refuses and stores nothing", async () => {
    const root = await freshRoot();
    const result = await rosterIn(root, ["login", "anthropic"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('no key for "anthropic": set ANTHROPIC_API_KEY');
  });
});
