import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runRoster } from "../support/cli.ts";

/** `roster validate` refuses a worker.toml that widens what org.toml grants. */

let root: string;
const rosterIn = (args: string[]) =>
  runRoster(args, { ANTHROPIC_API_KEY: "", OPENAI_API_KEY: "", ROSTER_ROOT: root });
const workerToml = () => join(root, "config/workers/elf/worker.toml");

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "roster-cli-narrow-"));
  expect((await rosterIn(["init"])).code).toBe(0);
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

describe("roster validate against a widening worker.toml", () => {
  // the example org.toml grants pids_limit 1024, memory "4g", cpus 2 (egress_lockdown by default)
  it.each([
    ["pids_limit = 4096", "box.pids_limit", "4096 is more than org.toml allows (1024)"],
    ['memory = "16g"', "box.memory", '"16g" is more than org.toml allows ("4g")'],
    ["cpus = 8", "box.cpus", "8 is more than org.toml allows (2)"],
    [
      "egress_lockdown = false",
      "box.egress_lockdown",
      "false switches off a protection org.toml keeps on (true by default)",
    ],
  ])("[box] %s exits 2 naming file:line and the field", async (line, field, says) => {
    await writeFile(workerToml(), `name = "elf"\n\n[box]\n${line}\n`);
    const text = await rosterIn(["validate"]);
    expect(text.code).toBe(2);
    expect(text.stdout).toContain(
      `workers/elf/worker.toml:4: ${field}: ${says}; a worker's config may only narrow the org's\n`,
    );
    expect(text.stdout).not.toContain("config ok");

    const json = await rosterIn(["validate", "--json"]);
    expect(json.code).toBe(2);
    const report = JSON.parse(json.stdout) as {
      ok: boolean;
      errors: Array<{ line: number; field: string }>;
    };
    expect(report.ok).toBe(false);
    expect(report.errors.map((error) => [error.line, error.field])).toEqual([[4, field]]);
  });

  it("a worker's allow grant exits 2; narrowing passes", async () => {
    await writeFile(
      workerToml(),
      'name = "elf"\n\n[[grant]]\nname = "mine"\nverdict = "allow"\nmatch = { host = "x.test" }\n',
    );
    const refused = await rosterIn(["validate"]);
    expect(refused.code).toBe(2);
    expect(refused.stdout).toMatch(/worker\.toml:5: grant\.0\.verdict: "mine" is an allow grant/);

    await writeFile(
      workerToml(),
      'name = "elf"\n\n[box]\npids_limit = 256\nmemory = "1g"\ncpus = 1\n\n[[grant]]\nname = "no-x"\nverdict = "deny"\nmatch = { host = "x.test" }\n',
    );
    const ok = await rosterIn(["validate"]);
    expect(ok.code, ok.stdout).toBe(0);
    expect(ok.stdout).toMatch(/config ok .* 1 worker\(s\)/);
  });
});
