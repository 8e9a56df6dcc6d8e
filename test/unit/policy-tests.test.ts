import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runRoster } from "../support/cli.ts";

/**
 * `[[test]]` in org.toml and a worker.toml: `roster validate` asks the door's
 * own ruling each case and exits 2 on one it gets otherwise, naming the file,
 * the line, the request, what was expected and what the door would do. A
 * fresh deployment's own tests (org.example.toml) pass.
 */

let root: string;
const config = () => join(root, "config");

const ORG = `
[[grant]]
name = "github-read"
verdict = "allow"
match = { host = "api.github.com", method = ["GET"] }

[[grant]]
name = "tools-hold-deletes"
verdict = "gate"
match = { host = "mcp.example.com", mcp = { tool = "delete_*" } }

[[test]]
request = "GET https://api.github.com/user"
worker = "elf"
expect = "allow"
rule = "github-read"

[[test]]
request = "POST https://mcp.example.com/mcp"
worker = "elf"
headers = { "content-type" = "application/json" }
body_file = "delete.json"
expect = "gate"
`;

const DELETE = JSON.stringify({
  jsonrpc: "2.0",
  id: 1,
  method: "tools/call",
  params: { name: "delete_repo", arguments: {} },
});

const validate = (...extra: string[]) =>
  runRoster(["validate", ...extra], { ROSTER_ROOT: root, ANTHROPIC_API_KEY: "" });

async function writeConfig(org: string, worker = 'name = "elf"\n'): Promise<void> {
  await mkdir(join(config(), "workers", "elf"), { recursive: true });
  await writeFile(join(config(), "org.toml"), org);
  await writeFile(join(config(), "workers", "elf", "worker.toml"), worker);
  await writeFile(join(config(), "delete.json"), DELETE);
}

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "roster-policy-tests-"));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

describe("policy tests in the config", () => {
  it("pass: validate says how many, and --json counts them", async () => {
    await writeConfig(ORG);
    const result = await validate();
    expect(result.code, result.stdout + result.stderr).toBe(0);
    expect(result.stdout).toContain("2 policy test(s) passed");
    expect(JSON.parse((await validate("--json")).stdout)).toMatchObject({ ok: true, tests: 2 });
  });

  it("fail: exit 2 naming the file, the line, the request and what the door would do", async () => {
    await writeConfig(ORG.replace('expect = "gate"', 'expect = "deny"'));
    const result = await validate();
    expect(result.code).toBe(2);
    const line = ORG.split("\n").lastIndexOf("[[test]]") + 1;
    expect(result.stdout).toContain(
      `${join(config(), "org.toml")}:${line}: test.1: POST https://mcp.example.com/mcp (worker elf): expected deny, the door would gate by rule "tools-hold-deletes"`,
    );
  });

  it("a worker.toml's tests are its own runs', and a rule that decides otherwise fails", async () => {
    const worker = `name = "elf"

[[test]]
request = "GET https://api.github.com/user"
expect = "allow"
rule = "web-read"
`;
    await writeConfig(ORG, worker);
    const result = await validate();
    expect(result.code).toBe(2);
    expect(result.stdout).toContain(
      `${join(config(), "workers", "elf", "worker.toml")}:3: test.0: GET https://api.github.com/user (worker elf): expected allow by rule "web-read", the door would allow by rule "github-read"`,
    );
  });

  it("an org.toml test must say whose run sends it; one naming no worker of the config fails", async () => {
    await writeConfig(
      `${ORG}\n[[test]]\nrequest = "GET https://api.github.com/"\nexpect = "allow"\n`,
    );
    const unnamed = await validate();
    expect(unnamed.code).toBe(2);
    expect(unnamed.stdout).toMatch(
      /org\.toml:\d+: test\.2\.worker: name the worker whose run sends this request/,
    );
    await writeConfig(ORG.replace('worker = "elf"', 'worker = "gone"'));
    const gone = await validate();
    expect(gone.code).toBe(2);
    expect(gone.stdout).toContain(
      'test.0: GET https://api.github.com/user: no worker named "gone" sends it',
    );
  });

  it("a fresh deployment's own tests pass", async () => {
    const fresh = await mkdtemp(join(tmpdir(), "roster-policy-fresh-"));
    try {
      const env = { ROSTER_ROOT: fresh, ANTHROPIC_API_KEY: "" };
      expect((await runRoster(["init"], env)).code).toBe(0);
      const result = await runRoster(["validate"], env);
      expect(result.code, result.stdout).toBe(0);
      expect(result.stdout).toMatch(/[1-9]\d* policy test\(s\) passed/);
    } finally {
      await rm(fresh, { recursive: true, force: true });
    }
  });
});
