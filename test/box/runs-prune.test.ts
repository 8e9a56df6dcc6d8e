import { existsSync, readFileSync } from "node:fs";
import { readFile, utimes, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listRuns, readRecord, runDir } from "../../runner/records/run-records/run-record.ts";
import type { ExecEnvelope } from "../../runner/work/runs/exec-envelope.ts";
import { SCRATCH_NOTE } from "../../runner/work/runs/retention.ts";
import { until } from "../support/chat-turns.ts";
import { testDocker } from "../support/docker.ts";
import { makeRosterRoot, type RosterRoot } from "../support/roster-root.ts";

/**
 * A run's $HOME is scratch: once the run has ended for longer than `[store]
 * scratch_keep` (or `roster runs prune --older-than`), its home/ and repos/
 * go from the run folder and its record stays — `roster runs ls` and `show`
 * still tell the run. The automatic pass runs at a run's start (at most once
 * an hour); a run still going is never touched.
 */
const docker = await testDocker();

interface PruneJson {
  older_than: string;
  pruned: Array<{ worker: string; id: string; freed: number; dropped: string[] }>;
  freed: number;
  failed: unknown[];
}

describe.skipIf(!docker)("run folder retention", () => {
  let deployment: RosterRoot;

  beforeAll(async () => {
    deployment = await makeRosterRoot("http://127.0.0.1:9/v1");
  });
  afterAll(async () => {
    await deployment?.cleanup();
  });

  const exec = async (command: string) => {
    const result = await deployment.roster(
      ["box", "exec", "elf", "--timeout", "60", "--", command],
      { timeoutMs: 120_000 },
    );
    const envelope = JSON.parse(result.stdout.trim() || "{}") as ExecEnvelope;
    expect(envelope.status, result.stderr).toBe("ok");
    if (!envelope.run_id) throw new Error("no run id");
    return runDir(deployment.paths.state, "elf", envelope.run_id);
  };
  const prune = async (...args: string[]) => {
    const result = await deployment.roster(["runs", "prune", ...args, "--json"]);
    expect(result.code, result.stderr).toBe(0);
    return JSON.parse(result.stdout) as PruneJson;
  };
  // a box may take its own permissions off what it wrote: the host still drops it
  const scribble =
    "dd if=/dev/zero of=$HOME/workspace/scratch.bin bs=1M count=3 status=none && mkdir -p $HOME/locked/in && touch $HOME/locked/in/f && chmod 000 $HOME/locked/in && chmod 500 $HOME/locked && echo done";

  it("roster runs prune drops old runs' $HOME and keeps their records", async () => {
    const first = await exec(scribble);
    const second = await exec(scribble);
    for (const dir of [first, second]) expect(existsSync(join(dir, "home/workspace"))).toBe(true);

    // nothing has ended an hour ago yet
    expect((await prune("--older-than", "1h")).pruned).toEqual([]);
    expect(existsSync(join(first, "home"))).toBe(true);

    const pruned = await prune("--older-than", "0s");
    expect(pruned.pruned.map((run) => run.id).sort()).toEqual(
      [first, second].map((dir) => dir.split("/").pop()).sort(),
    );
    for (const run of pruned.pruned) {
      // home/ and repos/ (every worker has a clone of its knowledge repo)
      expect(run.dropped).toEqual(["home", "repos"]);
      expect(run.freed).toBeGreaterThan(3 * 1024 * 1024);
    }
    for (const dir of [first, second]) {
      expect(existsSync(join(dir, "home"))).toBe(false);
      expect(existsSync(join(dir, "repos"))).toBe(false);
      expect(existsSync(join(dir, "run.json"))).toBe(true);
      expect(readFileSync(join(dir, SCRATCH_NOTE), "utf8")).toMatch(
        /home\/ and repos\/ dropped by roster runs prune, \d+ bytes/,
      );
    }
    // the records still tell the runs
    const listed = await deployment.roster(["runs", "ls", "--worker", "elf", "--json"]);
    const rows = JSON.parse(listed.stdout) as Array<{ id: string; state: string }>;
    for (const dir of [first, second])
      expect(rows.find((row) => row.id === dir.split("/").pop())).toMatchObject({ state: "done" });
    const shown = await deployment.roster(["runs", "show", second.split("/").pop() ?? ""]);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toContain("done");
    expect(shown.stdout).toMatch(
      /^scratch +\S+: home\/ and repos\/ dropped by roster runs prune, /m,
    );
    // a second pass finds nothing left to drop
    expect((await prune("--older-than", "0s")).pruned).toEqual([]);
  });

  it("never touches a run still going", async () => {
    const before = new Set(listRuns(deployment.paths.state, "elf").map((run) => run.id));
    // the box waits for a file the test puts in its $HOME from the host
    const child = deployment.spawnRoster([
      "box",
      "exec",
      "elf",
      "--timeout",
      "60",
      "--",
      "until [ -e $HOME/go ]; do sleep 0.1; done; echo went",
    ]);
    let out = "";
    child.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString();
    });
    const exited = new Promise((resolve) => child.once("exit", resolve));
    const going = await until(
      () =>
        listRuns(deployment.paths.state, "elf").find(
          (run) => !before.has(run.id) && readRecord(run.dir)?.state === "running",
        ),
      "the box's run to be going",
    );
    await until(() => existsSync(join(going.dir, "home/workspace")), "its $HOME");
    expect((await prune("--older-than", "0s")).pruned).toEqual([]);
    expect(existsSync(join(going.dir, "home/workspace"))).toBe(true);
    await writeFile(join(going.dir, "home/go"), "");
    await exited;
    expect(JSON.parse(out)).toMatchObject({ status: "ok", stdout: "went\n" });
  });

  it("a run's start drops the scratch of runs past [store] scratch_keep, not its own", async () => {
    const org = join(deployment.paths.config, "org.toml");
    const text = await readFile(org, "utf8");
    await writeFile(org, text.replace(/^\[store\]$/m, '[store]\nscratch_keep = "0s"'));
    const earlier = await exec(scribble);
    // the pass runs at most once an hour: make the last one an hour and more ago
    const stamp = join(deployment.paths.state, "runs-pruned.stamp");
    expect(existsSync(stamp)).toBe(true);
    const longAgo = new Date(Date.now() - 2 * 3_600_000);
    await utimes(stamp, longAgo, longAgo);
    const later = await exec("ls $HOME/workspace >/dev/null && echo here");
    expect(existsSync(join(earlier, "home"))).toBe(false);
    expect(readFileSync(join(earlier, SCRATCH_NOTE), "utf8")).toContain("[store] scratch_keep");
    expect(existsSync(join(later, "home"))).toBe(true);
  });

  it("refuses an age it can't read, in one line", async () => {
    const result = await deployment.roster(["runs", "prune", "--older-than", "3 days"]);
    expect(result.code).toBe(2);
    expect(result.stderr.trim()).toBe(
      'roster: --older-than must be a whole number and a unit, s, m, h or d, like "3d" (got "3 days")',
    );
    const org = join(deployment.paths.config, "org.toml");
    const text = await readFile(org, "utf8");
    await writeFile(org, text.replace(/^scratch_keep = .*$/m, 'scratch_keep = "forever"'));
    const invalid = await deployment.roster(["validate"]);
    expect(invalid.code).toBe(2);
    expect(invalid.stdout).toMatch(
      /org\.toml:\d+: store\.scratch_keep: an age like "3d", "12h" or "90m" \(found "forever"\)/,
    );
  });
});
