import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { readJournal } from "../../runner/records/journal/journal.ts";
import {
  type RunRecord,
  readRecord,
  runDir,
  writeRecord,
} from "../../runner/records/run-records/run-record.ts";
import { testDocker } from "../support/docker.ts";
import {
  ModelServer,
  type RecordedRequest,
  type ScriptStep,
  type Turn,
} from "../support/model-server.ts";
import {
  fakeRunWithClone,
  mainOf,
  makeCanonical,
  sh,
  writeRepoConnection,
} from "../support/repos.ts";
import { latestRecord, makeRosterRoot, type RosterRoot } from "../support/roster-root.ts";

/**
 * repo_push from a real box: the worker (the scripted model driving pi's bash
 * tool and repo_push) commits in its own clone, and the host lands it on the
 * canonical repo — or refuses, or keeps what could not land.
 */
const docker = await testDocker();

const bash = (command: string): Turn => ({
  toolCalls: [{ name: "bash", arguments: { command } }],
});
const push = (args: Record<string, unknown>): Turn => ({
  toolCalls: [{ name: "repo_push", arguments: { repo: "app", ...args } }],
});
const lastToolOutput = (request: RecordedRequest): string => {
  const tool = [...(request.body.messages ?? [])].reverse().find((m) => m.role === "tool");
  return typeof tool?.content === "string" ? tool.content : JSON.stringify(tool?.content ?? "");
};
const answer: ScriptStep = (request) => ({ text: `TOOL OUTPUT:\n${lastToolOutput(request)}` });

const GRANTS = `
[[action]]
name = "repo-push"
executor = "repo"
trust = "auto"
`;

describe.skipIf(!docker)("repo_push from a real box", () => {
  let model: ModelServer;
  let deployment: RosterRoot;
  let canonical: string;

  beforeAll(async () => {
    model = await new ModelServer().start("127.0.0.1");
    deployment = await makeRosterRoot(model.baseUrl("127.0.0.1"), { extraOrg: GRANTS });
    canonical = makeCanonical({ "README.md": "# app\n" });
    await writeRepoConnection(deployment.paths, "app", canonical, "elf");
  });
  beforeEach(() => {
    model.reset();
    model.requests.length = 0;
  });
  afterAll(async () => {
    await model?.stop();
    await deployment?.cleanup();
  });

  const lastRecord = () => latestRecord(deployment.paths, "elf");

  it("a commit in the box lands on main, and the record and the journal say so", async () => {
    const before = mainOf(canonical);
    model.play(
      bash(
        "cd ~/mnt/app && git status -sb | head -1 && printf 'hello\\n' > notes.md && git add notes.md && git commit -qm 'add notes' && git log --format=%an -1",
      ),
      push({ message: "add a notes file" }),
      answer,
    );
    const run = await deployment.roster(["run", "elf", "add notes and push"]);
    expect(run.code, run.stderr).toBe(0);
    const status = lastToolOutput(model.requests[1] as RecordedRequest);
    expect(status).toMatch(/^## run\/\S+\nelf\n?$/);
    const tools = (model.requests[0]?.body.tools ?? []).map((tool) => tool.function.name);
    expect(tools).toContain("repo_push");
    expect(run.stdout).toMatch(
      /done: "repo-push" ran\. Result: status: landed; branch: main; head: [0-9a-f]{40}/,
    );
    const head = mainOf(canonical);
    expect(head).not.toBe(before);
    expect(sh(canonical, ["log", "--format=%s|%an", "-1", "main"]).trim()).toBe("add notes|elf");
    expect(lastRecord()?.repos?.app).toMatchObject({
      state: "pushed",
      base_commit: before,
      produced_commit: head,
    });
    const landed = readJournal(deployment.paths, "elf", 30).find(
      (event) => event.kind === "executed" && event.intent === "repo-push",
    );
    expect(landed).toMatchObject({
      run_id: lastRecord()?.id,
      detail: { status: "landed", head, previous: before, commits: 1 },
    });
  });

  it("main moves meanwhile: the push is refused naming the new sha, the worker rebases and lands", async () => {
    let moved = "";
    model.play(
      bash("cd ~/mnt/app && printf 'mine\\n' > mine.md && git add . && git commit -qm mine"),
      (request) => {
        // someone lands on main while the worker works
        const seed = join(deployment.root, "elsewhere");
        sh(deployment.root, ["clone", "-q", canonical, seed]);
        sh(seed, [
          "-c",
          "user.name=x",
          "-c",
          "user.email=x@x",
          "commit",
          "-q",
          "--allow-empty",
          "-m",
          "theirs",
        ]);
        sh(seed, ["push", "-q", "origin", "HEAD:main"]);
        moved = mainOf(canonical);
        void request;
        return push({});
      },
      bash(
        "cd ~/mnt/app && git fetch -q origin && git rebase -q origin/main && git log --format=%s -2",
      ),
      push({ message: "rebased" }),
      answer,
    );
    const run = await deployment.roster(["run", "elf", "add mine and push"]);
    expect(run.code, run.stderr).toBe(0);
    const refusal = lastToolOutput(model.requests[2] as RecordedRequest);
    expect(refusal).toContain(`stale: main is now ${moved}`);
    expect(lastToolOutput(model.requests[3] as RecordedRequest)).toBe("mine\ntheirs\n");
    expect(run.stdout).toContain('done: "repo-push" ran. Result: status: landed');
    expect(sh(canonical, ["log", "--format=%s", "-2", "main"]).trim()).toBe("mine\ntheirs");
  });

  it("a box can't write the canonical repo: no push to origin, no write through the mount", async () => {
    const before = mainOf(canonical);
    const refsBefore = sh(canonical, ["for-each-ref"]);
    model.play(
      bash(
        [
          "cd ~/mnt/app && git commit -q --allow-empty -m sneaky",
          "git push -q origin HEAD:main 2>&1 | tail -1; echo push=$?",
          "echo x > ~/mnt/.origins/app/refs/heads/main 2>&1; echo write=$?",
          "touch ~/mnt/.origins/app/objects/evil 2>&1; echo touch=$?",
          "git --git-dir ~/mnt/.origins/app update-ref refs/heads/main HEAD 2>&1 | tail -1",
        ].join("; "),
      ),
      answer,
    );
    const run = await deployment.roster(["run", "elf", "try to write origin"]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/Read-only file system/);
    expect(mainOf(canonical)).toBe(before);
    // the unpushed commit is kept, not lost — and that is the only new ref
    const record = lastRecord();
    expect(record?.repos?.app).toMatchObject({
      state: "quarantined",
      quarantine_ref: `refs/roster/quarantine/elf/${record?.id}`,
    });
    const refsAfter = sh(canonical, ["for-each-ref"]);
    const others = refsAfter
      .split("\n")
      .filter((line) => !line.includes(String(record?.id)))
      .join("\n");
    expect(others).toBe(refsBefore);
  });

  it("work committed but never pushed is kept on a quarantine ref that runs show names", async () => {
    model.play(
      bash(
        "cd ~/mnt/app && printf 'draft\\n' > draft.md && git add . && git commit -qm 'half done' && git rev-parse HEAD",
      ),
      answer,
    );
    const run = await deployment.roster(["run", "elf", "start something"]);
    expect(run.code, run.stderr).toBe(0);
    const commit = lastToolOutput(model.requests[1] as RecordedRequest).trim();
    const record = lastRecord();
    const ref = `refs/roster/quarantine/elf/${record?.id}`;
    expect(record?.repos?.app).toMatchObject({
      state: "quarantined",
      produced_commit: commit,
      quarantine_ref: ref,
    });
    expect(sh(canonical, ["rev-parse", ref]).trim()).toBe(commit);
    expect(sh(canonical, ["show", `${ref}:draft.md`])).toBe("draft\n");
    const shown = await deployment.roster(["runs", "show", String(record?.id)]);
    expect(shown.stdout).toContain(`repo      app: quarantined`);
    expect(shown.stdout).toContain(`kept at ${ref}`);
  });

  it("a run whose runner died keeps its commits too: the next server start quarantines them", async () => {
    const runId = "2026-11-30-00-00-00-crashed1";
    const clone = await fakeRunWithClone({
      paths: deployment.paths,
      worker: "elf",
      runId,
      connection: "app",
      canonical,
    });
    writeFileSync(join(clone, "lost.md"), "almost lost\n");
    sh(clone, ["add", "-A"]);
    sh(clone, ["commit", "-q", "-m", "before the crash"]);
    const commit = sh(clone, ["rev-parse", "HEAD"]).trim();
    // back to the box's own view of origin, as the crashed run left it
    sh(clone, ["remote", "set-url", "origin", "/home/worker/mnt/.origins/app"]);
    writeFileSync(join(clone, ".git/objects/info/alternates"), "../../../.origins/app/objects\n");
    const dir = runDir(deployment.paths.state, "elf", runId);
    const record = readRecord(dir);
    // a pid that is not running: the runner is gone
    await writeRecord(dir, { ...(record as RunRecord), runner_pid: 2 ** 22 + 1 });
    if (process.getuid?.() === 0) execFileSync("chown", ["-R", "1000:1000", join(dir, "repos")]);

    const server = await deployment.roster(["server", "start", "--once", "--no-listen"]);
    expect(server.code, server.stderr).toBe(0);
    expect(server.stderr).toContain(`run ${runId} crashed with the last server; recorded`);
    const after = readRecord(dir);
    const ref = `refs/roster/quarantine/elf/${runId}`;
    expect(after).toMatchObject({
      state: "failed",
      ended_by: "crash",
      repos: { app: { state: "quarantined", produced_commit: commit, quarantine_ref: ref } },
    });
    expect(sh(canonical, ["show", `${ref}:lost.md`])).toBe("almost lost\n");
  });

  it("a worker granted no repo pushes only to its own knowledge repo, made at its first run", async () => {
    await mkdir(join(deployment.paths.config, "workers/imp"), { recursive: true });
    await writeFile(join(deployment.paths.config, "workers/imp/worker.toml"), 'name = "imp"\n');
    model.play({ text: "ok" });
    const run = await deployment.roster(["run", "imp", "hi"]);
    expect(run.code, run.stderr).toBe(0);
    const tool = (model.requests[0]?.body.tools ?? []).find(
      (one) => one.function.name === "repo_push",
    );
    expect(tool?.function.description).toMatch(
      /Writable repos: knowledge at \S+ \(lands on main\)\. /,
    );
    // nothing of this run in a tool's words: a provider's prompt cache keeps every token after them
    expect(tool?.function.description).not.toMatch(/run\/\d{4}-/);
    const knowledge = join(deployment.paths.data, "workers/imp/knowledge.git");
    expect(sh(knowledge, ["log", "--format=%s", "main"]).trim()).toBe("knowledge repo of imp");
  });

  /** A commit whose tree gains a `.git/hooks/post-checkout` beside the rest (git add refuses such a path, plumbing does not). */
  const DOTGIT =
    "b=$(printf '#!/bin/sh\\nexit 0\\n' | git hash-object -w --stdin) && h=$(printf '100755 blob %s\\tpost-checkout\\n' $b | git mktree) && d=$(printf '040000 tree %s\\thooks\\n' $h | git mktree) && t=$({ git ls-tree HEAD; printf '040000 tree %s\\t.git\\n' $d; } | git mktree) && c=$(git commit-tree $t -p HEAD -m crafted) && git update-ref refs/heads/$(git branch --show-current) $c";

  it.each([
    [
      "a symlink to a host file",
      "ln -s /etc/passwd passwd.md && git add passwd.md && git commit -qm link",
      /"passwd\.md" is a symlink/,
    ],
    [
      "an executable",
      "printf '#!/bin/sh\\necho hi\\n' > run.sh && chmod +x run.sh && git add run.sh && git commit -qm exe",
      /"run\.sh" is executable/,
    ],
    // git can't put such a path in an index, so the box's own tool stops first; the host's
    // refusal of the same objects sent around the tool is in push-checks.test.ts
    ["a .git/hooks file", DOTGIT, /uncommitted changes[\s\S]*\.git\/hooks\/post-checkout/],
    [
      "a 20 MB file",
      "head -c 20971520 /dev/zero | tr '\\0' a > huge.md && git add huge.md && git commit -qm huge",
      /"huge\.md" is 20971520 bytes, over the per-file limit/,
    ],
  ])(
    "a push with %s from the box is refused with the reason, and nothing lands",
    async (_what, script, reason) => {
      const before = mainOf(canonical);
      model.play(
        bash(`cd ~/mnt/app && ${script} && echo committed`),
        push({ message: "crafted" }),
        answer,
      );
      const run = await deployment.roster(["run", "elf", "push this"], { timeoutMs: 180_000 });
      expect(run.code, run.stderr).toBe(0);
      expect(lastToolOutput(model.requests[1] as RecordedRequest)).toContain("committed");
      expect(run.stdout).toMatch(reason);
      expect(mainOf(canonical)).toBe(before);
    },
  );
});
