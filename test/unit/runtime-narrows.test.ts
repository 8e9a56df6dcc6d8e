import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runRoster } from "../support/cli.ts";

/**
 * `[box] runtime` narrows like every other limit: a worker may require gVisor
 * where org.toml does not, and can never drop it where org.toml requires it.
 * Config only, judged by `roster validate`: no engine (the boxes under runsc
 * are test/box/gvisor.test.ts's).
 */
describe("[box] runtime narrows", () => {
  let root: string;
  const rosterIn = (args: string[]) => runRoster(args, { ROSTER_ROOT: root });
  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), "roster-runtime-narrow-"));
    expect((await rosterIn(["init"])).code).toBe(0);
  });
  afterAll(async () => {
    await rm(root, { recursive: true, force: true });
  });
  const setRuntimes = async (org: string | undefined, worker: string) => {
    const orgFile = join(root, "config/org.toml");
    const text = (await readFile(orgFile, "utf8")).replace(/^runtime = .*\n/m, "");
    await writeFile(
      orgFile,
      org ? text.replace(/^\[box\]\n/m, `[box]\nruntime = "${org}"\n`) : text,
    );
    await writeFile(
      join(root, "config/workers/elf/worker.toml"),
      `name = "elf"\n\n[box]\nruntime = "${worker}"\n`,
    );
  };

  it("a worker can never drop runsc when org.toml requires it", async () => {
    await setRuntimes("runsc", "runc");
    const result = await rosterIn(["validate"]);
    expect(result.code).toBe(2);
    expect(result.stdout).toContain(
      `workers/elf/worker.toml:4: box.runtime: "runc" drops the gVisor kernel org.toml requires (runtime = "runsc"); a worker's config may only narrow the org's`,
    );
  });

  it("a worker may require runsc when org.toml does not", async () => {
    await setRuntimes(undefined, "runsc");
    const result = await rosterIn(["validate"]);
    expect(result.code, result.stdout).toBe(0);
  });
});
