import { readFileSync } from "node:fs";
import { appendFile, mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { knowledgePath } from "../../runner/ground/config/knowledge.ts";
import { runDir } from "../../runner/records/run-records/run-record.ts";
import { readTasks, updateTasks } from "../../runner/records/task-list/store.ts";
import { approveGate } from "../../runner/services/actions/desk.ts";
import { listGates } from "../../runner/services/actions/gates.ts";
import { RUN_CONTEXT } from "../../runner/work/runs/run-context.ts";
import { testDocker } from "../support/docker.ts";
import { ModelServer, type RecordedRequest, type Turn } from "../support/model-server.ts";
import { mainOf, makeCanonical, sh, writeRepoConnection } from "../support/repos.ts";
import { latestRecord, makeRosterRoot, type RosterRoot } from "../support/roster-root.ts";
import { termRouter } from "../support/term-router.ts";

/**
 * The knowledge repo and the clean-room rule in real boxes on real git: a
 * session turn in a chat channel is refused a push to a shared repo, naming
 * the rule, and lands its push to its own knowledge repo once a human
 * approves; a push to a repo that takes conversation runs is refused when it
 * names someone from the conversation; and every kind of run writes its
 * provenance.
 */
const docker = await testDocker();

const CHANNEL = "term-room-elf";
const bash = (command: string): Turn => ({
  toolCalls: [{ name: "bash", arguments: { command } }],
});
const push = (repo: string): Turn => ({
  toolCalls: [{ name: "repo_push", arguments: { repo, message: "notes" } }],
});
const toolOutput = (request: RecordedRequest | undefined): string => {
  const tool = [...(request?.body.messages ?? [])].reverse().find((m) => m.role === "tool");
  return typeof tool?.content === "string" ? tool.content : JSON.stringify(tool?.content ?? "");
};

const GRANTS = `
[[action]]
name = "repo-push"
executor = "repo"
trust = "gate"

[[action]]
name = "file-task"
executor = "task"
trust = "auto"
`;
const fileTask = (prompt: string): Turn => ({
  toolCalls: [{ name: "file_task", arguments: { prompt } }],
});

describe.skipIf(!docker)("the knowledge repo and the clean-room rule", () => {
  let model: ModelServer;
  let deployment: RosterRoot;
  let app: string;
  let wiki: string;

  beforeAll(async () => {
    model = await new ModelServer().start("127.0.0.1");
    deployment = await makeRosterRoot(model.baseUrl("127.0.0.1"), { extraOrg: GRANTS });
    app = makeCanonical({ "README.md": "# app\n" });
    wiki = makeCanonical({ "README.md": "# wiki\n" });
    await writeRepoConnection(deployment.paths, "app", app, "elf");
    await writeRepoConnection(deployment.paths, "wiki", wiki, "elf", 'write_from = "any"');
    // someone spoke in the channel before the session began
    const history = join(deployment.paths.data, "channels", CHANNEL);
    await mkdir(history, { recursive: true });
    await writeFile(
      join(history, "messages.jsonl"),
      `${JSON.stringify({ ts: "2026-11-01T10:00:00Z", author_id: "term:zq", author: "Zelda Quinn", role: "user", content: "the release is on Friday", attachments: [] })}\n`,
    );
  });
  beforeEach(() => {
    model.reset();
    model.requests.length = 0;
  });
  afterAll(async () => {
    await model?.stop();
    await deployment?.cleanup();
  });

  it("by default a session's conversation stays out of the knowledge repo and the task list", async () => {
    const knowledge = knowledgePath(deployment.paths.data, "elf");
    const knowledgeBefore = mainOf(knowledge);
    model.play(
      bash(
        "cd ~/mnt/knowledge && echo 'the release is on Friday' > release.md && git add . && git commit -qm release",
      ),
      push("knowledge"),
      fileTask("ask Zelda Quinn whether Friday holds"),
      (request) => ({ text: `TASK: ${toolOutput(request)}` }),
    );
    const { router, send } = termRouter(deployment);
    const delivered = await send(CHANNEL, "note the release date");
    await router.closeAll();
    const refused = toolOutput(model.requests[2]);
    expect(refused).toContain("refused by the clean-room rule");
    expect(refused).toContain('[knowledge] write_from = "clean-room"');
    expect(mainOf(knowledge)).toBe(knowledgeBefore);
    expect(delivered.result.texts.join("")).toMatch(
      /TASK: .*payload\.prompt: refused by the clean-room rule: it names Zelda Quinn/s,
    );
    expect(readTasks(deployment.paths, "elf").tasks).toHaveLength(0);
  });

  it("a session turn: the shared repo refuses the push naming the rule; with [knowledge] write_from = any, knowledge lands after approval", async () => {
    await appendFile(
      join(deployment.paths.config, "org.toml"),
      '\n[knowledge]\nwrite_from = "any"\n',
    );
    const appBefore = mainOf(app);
    const knowledge = knowledgePath(deployment.paths.data, "elf");
    const knowledgeBefore = mainOf(knowledge);
    model.play(
      bash(
        "cd ~/mnt/app && echo 'release on Friday' > release.md && git add . && git commit -qm release && cd ~/mnt/knowledge && echo 'the release is on Friday' > release.md && git add . && git commit -qm release",
      ),
      push("app"),
      push("knowledge"),
      (request) => ({ text: `KNOWLEDGE: ${toolOutput(request)}` }),
    );
    const { router, send } = termRouter(deployment);
    const delivered = await send(CHANNEL, "note the release date");
    await router.closeAll();

    const refused = toolOutput(model.requests[2]);
    expect(refused).toContain("refused by the clean-room rule");
    expect(refused).toContain(CHANNEL);
    expect(refused).toContain('write_from = "clean-room"');
    expect(mainOf(app)).toBe(appBefore);
    expect(delivered.result.texts.join("")).toMatch(/KNOWLEDGE: .*pending/s);

    const [gate] = listGates(deployment.paths, "elf").filter(
      (one) => one.intent === "repo-push" && one.state === "pending",
    );
    expect(gate?.payload).toMatchObject({ repo: "knowledge" });
    if (!gate) throw new Error("no gate for the knowledge push");
    expect(mainOf(knowledge)).toBe(knowledgeBefore);
    const done = await approveGate(deployment.paths, gate, { by: "test" });
    expect(done.state).toBe("executed");
    expect(mainOf(knowledge)).not.toBe(knowledgeBefore);
    expect(sh(knowledge, ["show", "main:release.md"])).toBe("the release is on Friday\n");

    // the session's provenance: its channel and the people who spoke there
    const context = JSON.parse(
      readFileSync(
        join(runDir(deployment.paths.state, "elf", delivered.runId), RUN_CONTEXT),
        "utf8",
      ),
    );
    expect(context).toMatchObject({ kind: "session", channels: [CHANNEL] });
    expect(context.people).toEqual(
      expect.arrayContaining([
        { name: "Zelda Quinn", handle: "zq" },
        { name: "op", handle: "op" },
      ]),
    );
  });

  it("a repo that takes conversation runs still refuses a push naming a participant", async () => {
    const before = mainOf(wiki);
    model.play(
      bash(
        "cd ~/mnt/wiki && printf '# Release\\nAsk Zelda Quinn before Friday.\\n' > release.md && git add . && git commit -qm release",
      ),
      push("wiki"),
      bash(
        "cd ~/mnt/wiki && printf '# Release\\nThe release is on Friday.\\n' > release.md && git commit -qam 'release, no names' && git reset -q --soft origin/main && git commit -qm release",
      ),
      push("wiki"),
      (request) => ({ text: `WIKI: ${toolOutput(request)}` }),
    );
    const { router, send } = termRouter(deployment);
    const delivered = await send(CHANNEL, "write the release page");
    await router.closeAll();
    const named = toolOutput(model.requests[2]);
    expect(named).toContain("refused by the clean-room rule");
    expect(named).toContain('"release.md" line 2 names Zelda Quinn');
    // without the name it may go (it waits for a human like any push here)
    expect(delivered.result.texts.join("")).toMatch(/WIKI: .*pending/s);
    expect(mainOf(wiki)).toBe(before);
  });

  it("a one-shot run carries no conversation; a task filed from a chat carries its channel", async () => {
    model.play({ text: "done" });
    const oneShot = await deployment.roster(["run", "elf", "say done"]);
    expect(oneShot.code, oneShot.stderr).toBe(0);
    const record = latestRecord(deployment.paths, "elf");
    if (!record) throw new Error("no record");
    const context = JSON.parse(
      readFileSync(join(runDir(deployment.paths.state, "elf", record.id), RUN_CONTEXT), "utf8"),
    );
    expect(context).toEqual({ run: record.id, kind: "box", channels: [], people: [] });

    await updateTasks(deployment.paths, "elf", (list) => [
      ...list.tasks,
      {
        id: "t-0000c1ea",
        prompt: "say done",
        ceiling_min: 5,
        state: "pending",
        filed_at: new Date().toISOString(),
        filed_by: "cli:test",
        channel: CHANNEL,
        reply_to: false,
      },
    ]);
    model.play({ text: "done" });
    const server = await deployment.roster(["server", "start", "--once"]);
    expect(server.code, server.stderr).toBe(0);
    const task = latestRecord(deployment.paths, "elf");
    expect(task).toMatchObject({ kind: "task", task_id: "t-0000c1ea" });
    const taskContext = JSON.parse(
      readFileSync(
        join(runDir(deployment.paths.state, "elf", task?.id ?? "?"), RUN_CONTEXT),
        "utf8",
      ),
    );
    expect(taskContext).toMatchObject({ kind: "task", channels: [CHANNEL] });
    expect(taskContext.people).toContainEqual({ name: "Zelda Quinn", handle: "zq" });
  });
});
