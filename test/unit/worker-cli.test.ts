import { spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { Budgets } from "../../runner/boundary/gateway/spend/budget.ts";
import { loadConfig } from "../../runner/ground/config/load.ts";
import { rosterPaths } from "../../runner/ground/config/paths.ts";
import { workerSubject } from "../../runner/ground/config/subject.ts";
import { workerView } from "../../runner/ground/config/worker-view.ts";
import { git } from "../../runner/ground/git/git.ts";
import { newRunId, runDir, writeRecord } from "../../runner/records/run-records/run-record.ts";
import { runRoster } from "../support/cli.ts";

/**
 * `roster worker add | ls | show | rm` through the real command, against a
 * root made by `roster init`. Run records and spends are written by the
 * modules runs and the gateway write them with, so `ls` reads what a real run
 * leaves behind.
 */
const roots: string[] = [];
const children: Array<{ kill(): boolean }> = [];
afterEach(async () => {
  for (const child of children.splice(0)) child.kill();
  for (const root of roots.splice(0)) await rm(root, { recursive: true, force: true });
});

function rosterIn(root: string, args: string[]) {
  return runRoster(args, { ANTHROPIC_API_KEY: "", OPENAI_API_KEY: "", ROSTER_ROOT: root });
}

async function initRoot(): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), "roster-workers-"));
  roots.push(root);
  expect((await rosterIn(root, ["init"])).code).toBe(0);
  return root;
}

/** Every path under the root with its size and mtime: any write shows. */
function tree(root: string): string[] {
  return readdirSync(root, { recursive: true })
    .map((entry) => join(root, String(entry)))
    .map((path) => {
      const stat = statSync(path);
      return `${relative(root, path)} ${stat.isDirectory() ? "dir" : stat.size} ${stat.mtimeMs}`;
    })
    .sort();
}

/** A process that lives as long as the test: the runner of a run that is going. */
function liveProcess(): number {
  const child = spawn(process.execPath, ["-e", "setTimeout(() => {}, 600000)"], {
    stdio: "ignore",
  });
  children.push(child);
  if (child.pid === undefined) throw new Error("could not start a stand-in runner");
  return child.pid;
}

describe("roster worker add", () => {
  it("adds a worker that validates, loads and has its identity, store and knowledge repo", async () => {
    const root = await initRoot();
    const result = await rosterIn(root, ["worker", "add", "scout"]);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("added worker scout");
    const validate = await rosterIn(root, ["validate"]);
    expect(validate.code).toBe(0);
    expect(validate.stdout).toMatch(/config ok .* 2 worker\(s\)/);

    const paths = rosterPaths({ ROSTER_ROOT: root });
    const config = loadConfig(paths.config, { vaultDir: paths.vault });
    expect(config.errors).toEqual([]);
    const view = workerView(config, "scout", { dataRoot: paths.data });
    expect(view?.mounts.map((mount) => mount.name)).toEqual(["knowledge"]);
    expect(readFileSync(join(root, "config/workers/scout/identity.md"), "utf8")).toContain(
      "You are scout",
    );
    expect(statSync(join(root, "data/workers/scout/store")).isDirectory()).toBe(true);
    const knowledge = join(root, "data/workers/scout/knowledge.git");
    expect((await git(knowledge, ["ls-tree", "--name-only", "main"])).trim()).toBe("README.md");
  });

  it("`worker init` is the same command, as the public roster spells it", async () => {
    const root = await initRoot();
    expect((await rosterIn(root, ["worker", "init", "scout"])).code).toBe(0);
    expect(existsSync(join(root, "config/workers/scout/worker.toml"))).toBe(true);
  });

  it.each([
    ["Scout", /"Scout" is not a worker name: lower-case letters, digits/],
    ["-scout", /not a worker name/],
    ["sc/out", /not a worker name/],
    ["org", /"org" is reserved/],
    ["elf", /a worker named "elf" already exists/],
  ])("refuses %s with one line, exit 2, and writes nothing", async (name, said) => {
    const root = await initRoot();
    const before = tree(root);
    const result = await rosterIn(root, ["worker", "add", "--", name]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(said);
    expect(result.stderr.trim().split("\n")).toHaveLength(1);
    expect(tree(root)).toEqual(before);
  });

  it("refuses a name whose data is still there, and a config that won't load, writing nothing", async () => {
    const root = await initRoot();
    await mkdir(join(root, "data/workers/ghost/store"), { recursive: true });
    let before = tree(root);
    const taken = await rosterIn(root, ["worker", "add", "ghost"]);
    expect(taken.code).toBe(2);
    expect(taken.stderr).toContain("data/workers/ghost holds data of a worker by that name");
    expect(tree(root)).toEqual(before);

    await writeFile(join(root, "config/workers/elf/worker.toml"), 'name = "elf"\nbogus = 1\n');
    before = tree(root);
    const broken = await rosterIn(root, ["worker", "add", "scout"]);
    expect(broken.code).toBe(2);
    expect(broken.stderr).toContain('adding "scout" would leave the config invalid');
    expect(broken.stderr).toMatch(/config\/workers\/elf\/worker\.toml:2: bogus: unknown key/);
    expect(tree(root)).toEqual(before);
  });
});

describe("roster worker ls and show", () => {
  it("ls says who is running, the last run and its outcome, queued tasks, sessions and spend", async () => {
    const root = await initRoot();
    expect((await rosterIn(root, ["worker", "add", "scout"])).code).toBe(0);
    const paths = rosterPaths({ ROSTER_ROOT: root });
    // elf: a finished run, then a chat session that is going
    const done = newRunId(new Date(Date.now() - 60_000));
    await writeRecord(runDir(paths.state, "elf", done), {
      id: done,
      worker: "elf",
      kind: "box",
      state: "failed",
      started_at: new Date(Date.now() - 60_000).toISOString(),
      ended_at: new Date(Date.now() - 30_000).toISOString(),
      ended_by: "ceiling",
    });
    const session = newRunId();
    await writeRecord(runDir(paths.state, "elf", session), {
      id: session,
      worker: "elf",
      kind: "session",
      state: "running",
      started_at: new Date().toISOString(),
      channel_id: "term-op-elf",
      runner_pid: liveProcess(),
    });
    // scout: two tasks queued, and what its model calls cost today
    expect((await rosterIn(root, ["task", "add", "scout", "look around"])).code).toBe(0);
    expect((await rosterIn(root, ["task", "add", "scout", "look again"])).code).toBe(0);
    new Budgets(paths.audit, [], []).record(workerSubject("scout"), { tokens: 1200, usd: 0.25 });
    new Budgets(paths.audit, [], []).record(workerSubject("scout"), { tokens: 300 });

    const result = await rosterIn(root, ["worker", "ls", "--json"]);
    expect(result.code).toBe(0);
    const rows = result.stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line));
    expect(rows).toEqual([
      {
        name: "elf",
        state: "running",
        live: [{ id: session, kind: "session" }],
        last_run: expect.objectContaining({ id: done, state: "failed", ended_by: "ceiling" }),
        queued: 0,
        sessions: 1,
        spent_today: {},
        paused: null,
      },
      {
        name: "scout",
        state: "idle",
        live: [],
        last_run: null,
        queued: 2,
        sessions: 0,
        spent_today: { tokens: 1500, usd: 0.25 },
        paused: null,
      },
    ]);
    const text = await rosterIn(root, ["worker", "ls"]);
    expect(text.stdout).toMatch(/^elf\s+running \(session\).*box failed \(ceiling\)/m);
    expect(text.stdout).toMatch(/^scout\s+idle\s+-\s+-\s+2\s+0\s+1500 tokens, \$0\.2500/m);
  });

  it("show gives the narrowed settings, the rules that apply to it alone, trust and channels", async () => {
    const root = await initRoot();
    expect((await rosterIn(root, ["worker", "add", "scout"])).code).toBe(0);
    const org = join(root, "config/org.toml");
    await writeFile(
      org,
      `${readFileSync(org, "utf8")}\n[[grant]]\nname = "scout-docs"\nverdict = "allow"\nworkers = ["scout"]\nmatch = { host = "docs.example.com" }\n`,
    );
    await writeFile(
      join(root, "config/workers/scout/worker.toml"),
      'name = "scout"\n\n[box]\nmemory = "1g"\n\n[channels]\nslack = "scout-bot"\n',
    );
    const show = async (name: string) => {
      const result = await rosterIn(root, ["worker", "show", name, "--json"]);
      expect(result.code).toBe(0);
      return JSON.parse(result.stdout) as {
        view: { box: { memory: string } };
        grants: Array<{ name: string; scope: string }>;
        trust: unknown[];
        channels: { bots: Record<string, string> };
      };
    };
    const scout = await show("scout");
    expect(scout.view.box.memory).toBe("1g");
    expect(scout.grants.map((grant) => grant.name)).toContain("scout-docs");
    expect(scout.channels.bots).toEqual({ slack: "scout-bot" });
    const elf = await show("elf");
    expect(elf.view.box.memory).toBe("4g");
    expect(elf.grants.map((grant) => grant.name)).not.toContain("scout-docs");
    const text = await rosterIn(root, ["worker", "show", "scout"]);
    expect(text.stdout).toContain('slack bot "scout-bot"');
    expect(text.stdout).toMatch(/allow\s+scout-docs: host="docs.example.com"/);

    const missing = await rosterIn(root, ["worker", "show", "nobody"]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('no worker named "nobody"');
  });
});

describe("roster worker rm", () => {
  it("archives config, data and runs under data/archive, deleting nothing", async () => {
    const root = await initRoot();
    expect((await rosterIn(root, ["worker", "add", "scout"])).code).toBe(0);
    const paths = rosterPaths({ ROSTER_ROOT: root });
    await writeFile(join(root, "data/workers/scout/store/notes.md"), "kept\n");
    const id = newRunId();
    await writeRecord(runDir(paths.state, "scout", id), {
      id,
      worker: "scout",
      kind: "box",
      state: "done",
      started_at: new Date().toISOString(),
      ended_at: new Date().toISOString(),
      ended_by: "exit",
    });

    const unasked = await rosterIn(root, ["worker", "rm", "scout"]);
    expect(unasked.code).toBe(2);
    expect(unasked.stderr).toContain("add --yes");
    expect(existsSync(join(root, "config/workers/scout"))).toBe(true);

    const result = await rosterIn(root, ["worker", "rm", "scout", "--yes", "--json"]);
    expect(result.code).toBe(0);
    const { archive } = JSON.parse(result.stdout) as { archive: string };
    expect(archive).toMatch(/data\/archive\/scout-\d{8}-\d{6}$/);
    expect(readFileSync(join(archive, "config/worker.toml"), "utf8")).toBe('name = "scout"\n');
    expect(readFileSync(join(archive, "data/store/notes.md"), "utf8")).toBe("kept\n");
    expect(existsSync(join(archive, "data/knowledge.git/HEAD"))).toBe(true);
    expect(existsSync(join(archive, "runs", id, "run.json"))).toBe(true);
    for (const gone of ["config/workers/scout", "data/workers/scout", "state/runs/scout"])
      expect(existsSync(join(root, gone))).toBe(false);
    expect((await rosterIn(root, ["validate"])).stdout).toMatch(/1 worker\(s\)/);
    // the name is free again
    expect((await rosterIn(root, ["worker", "add", "scout"])).code).toBe(0);
  });

  it("refuses while a run of it is going, and while a connection still grants to it", async () => {
    const root = await initRoot();
    const paths = rosterPaths({ ROSTER_ROOT: root });
    const id = newRunId();
    await writeRecord(runDir(paths.state, "elf", id), {
      id,
      worker: "elf",
      kind: "task",
      state: "running",
      started_at: new Date().toISOString(),
      runner_pid: liveProcess(),
    });
    let before = tree(root);
    const running = await rosterIn(root, ["worker", "rm", "elf", "--yes"]);
    expect(running.code).toBe(2);
    expect(running.stderr).toContain(`elf has a run going: ${id} (task)`);
    expect(tree(root)).toEqual(before);

    for (const child of children.splice(0)) child.kill();
    const shared = join(root, "shared");
    await mkdir(shared);
    await writeFile(
      join(root, "config/connections/shared.toml"),
      `kind = "host-dir"\npath = "${shared}"\n\n[grant.elf]\n`,
    );
    before = tree(root);
    const granted = await rosterIn(root, ["worker", "rm", "elf", "--yes"]);
    expect(granted.code).toBe(2);
    expect(granted.stderr).toContain('removing "elf" would leave the config invalid');
    expect(granted.stderr).toMatch(
      /connections\/shared\.toml:\d+: grant\.elf: no worker named "elf"/,
    );
    expect(tree(root)).toEqual(before);
  });
});
