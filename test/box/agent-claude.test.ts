import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RUN_CLAUDE, RUN_CODEX } from "../../runner/boundary/box/layout.ts";
import { readTasks } from "../../runner/records/task-list/store.ts";
import {
  type AgentDeployment,
  agentDeployment,
  expectedKeySearch,
  expectRunAfterward,
  keySearch,
} from "../support/agent-deployment.ts";
import {
  AnthropicModelServer,
  type AnthropicRequest,
  textOf,
} from "../support/anthropic-model-server.ts";
import { makeHome } from "../support/box-home.ts";
import { testDocker, testEngine } from "../support/docker.ts";
import { runInBox } from "../support/pi-box.ts";
import { latestRecord, type RosterRoot } from "../support/roster-root.ts";
import { termRouter } from "../support/term-router.ts";

const docker = await testDocker();

/**
 * A worker whose agent is Claude Code: the real CLI in a real box, its model
 * calls through the real gateway to a stand-in for Anthropic's Messages API,
 * with our tools from the box's MCP server. Its first run builds the agent's
 * layer on the box image (agent-image.ts).
 */
const REAL_KEY = "sk-ant-api03-the-real-one-never-in-a-box";

/** The text of the newest tool result the model was sent. */
const lastToolResult = (request: AnthropicRequest): string => {
  for (const message of [...(request.body.messages ?? [])].reverse())
    for (const block of Array.isArray(message.content) ? [...message.content].reverse() : [])
      if (block.type === "tool_result") return textOf(block.content);
  return "";
};

describe.skipIf(!docker)("Claude Code as a worker's agent, in a real box, through the door", () => {
  let model: AnthropicModelServer;
  let agent: AgentDeployment;
  let deployment: RosterRoot;

  beforeAll(async () => {
    model = await new AnthropicModelServer().start("127.0.0.1");
    agent = await agentDeployment({
      agent: "claude",
      provider: "anthropic",
      model: "claude-sonnet-4-5",
      baseUrl: model.baseUrl("127.0.0.1"),
      key: REAL_KEY,
    });
    deployment = agent.deployment;
  }, 600_000);
  afterAll(async () => {
    await model?.stop();
    await agent?.stop();
  });

  it("runs bash and our tools, proposes to the desk, and the box never holds the key", async () => {
    const url = agent.pageUrl;
    model.play(
      {
        toolUses: [
          {
            name: "Bash",
            input: {
              command: keySearch(REAL_KEY),
            },
          },
        ],
      },
      { toolUses: [{ name: "mcp__roster__fetch_pages", input: { urls: [url] } }] },
      (request) => ({
        toolUses: [
          {
            name: "mcp__roster__message_user",
            input: {
              text: `The page says: ${lastToolResult(request).includes("judged at the door")}`,
            },
          },
        ],
      }),
      { text: "All done: the page was read and you were told." },
    );
    const run = await deployment.roster(
      ["run", "elf", "read the page about the door and tell me"],
      {
        timeoutMs: 600_000,
      },
    );
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain("All done: the page was read and you were told.");
    // the live view shows each tool by the name pi would give it
    expect(run.stderr).toMatch(/→ Bash /);
    expect(run.stderr).toMatch(/→ fetch_pages /);
    expect(run.stderr).toMatch(/→ message_user /);

    const calls = model.requests;
    expect(calls).toHaveLength(4);
    // the real key was added in transit; the box sent only its stand-in
    for (const call of calls) expect(call.headers["x-api-key"]).toBe(REAL_KEY);
    const tools = (calls[0]?.body.tools ?? []).map((tool) => tool.name);
    expect(tools).toEqual(
      expect.arrayContaining(["Bash", "mcp__roster__fetch_pages", "mcp__roster__message_user"]),
    );
    expect(tools).not.toContain("WebFetch");
    expect(tools).not.toContain("WebSearch");
    // roster's part of the system prompt reached it
    expect(JSON.stringify(calls[0]?.body.system)).toContain("elf");

    // bash ran in the box, which holds the key nowhere: not in its environment, not in a file
    expect(lastToolResult(calls[1] as AnthropicRequest)).toContain(expectedKeySearch(REAL_KEY));
    expect(lastToolResult(calls[2] as AnthropicRequest)).toContain("judged at the door");
    expect(lastToolResult(calls[3] as AnthropicRequest)).toMatch(/held|gate|approv/i);

    // the proposal waits on the desk, the door audited every call, runs show tells of it
    await expectRunAfterward(deployment, {
      agent: "claude",
      title: "Claude Code",
      modelPath: "/v1/messages",
      modelRule: "model:anthropic",
      calls: 4,
    });
  }, 900_000);

  it("is stopped at its ceiling like any run", async () => {
    model.reset();
    // (Claude Code refuses a bare `sleep 600` and says to use its Monitor tool instead)
    model.play({
      toolUses: [{ name: "Bash", input: { command: "python3 -c 'import time; time.sleep(600)'" } }],
    });
    const started = Date.now();
    const run = await deployment.roster(["run", "--ceiling", "0.1", "elf", "wait a long time"], {
      timeoutMs: 300_000,
    });
    expect(run.code, `${run.stderr}\n${run.stdout}`).toBe(2);
    expect(latestRecord(deployment.paths, "elf")).toMatchObject({
      agent: "claude",
      ended_by: "ceiling",
    });
    console.log(`Claude Code with a 0.1-minute ceiling stopped after ${Date.now() - started} ms`);
  }, 300_000);

  it("keeps a warm session: two turns on one live Claude Code, the second with the first's history", async () => {
    model.reset();
    model.play(
      { toolUses: [{ name: "Bash", input: { command: "echo turn-one-was-here > ~/store/mark" } }] },
      { text: "first turn done" },
      (request) => ({
        text: `second turn saw ${JSON.stringify(request.body.messages).includes("first turn done") ? "the first" : "nothing"}`,
      }),
    );
    const { router, send: sendTo } = termRouter(deployment);
    const send = (text: string) => sendTo("term-claude-elf", text);
    const first = await send("leave a mark in your store");
    const second = await send("what did you say before?");
    expect(first.result.texts.join("")).toBe("first turn done");
    expect(first.result.tools).toEqual(["Bash"]);
    expect(second.result.texts.join("")).toBe("second turn saw the first");
    expect(second.runId).toBe(first.runId);
    const ends = await router.closeAll();
    expect(ends).toEqual([expect.objectContaining({ turns: 2, error: undefined })]);
    const record = latestRecord(deployment.paths, "elf");
    expect(record).toMatchObject({ kind: "session", agent: "claude", turns: 2 });
    // the session's turns went through the door like a run's, with the key added there
    for (const call of model.requests) expect(call.headers["x-api-key"]).toBe(REAL_KEY);
  }, 300_000);

  it("the box image without the agent's layer fails at once, saying which layer it needs", async () => {
    const engine = await testEngine();
    if (!engine) throw new Error("no engine");
    const home = await makeHome();
    try {
      for (const [launcher, name] of [
        [RUN_CLAUDE, "claude"],
        [RUN_CODEX, "codex"],
      ] as const) {
        const run = await runInBox(engine, [launcher, "--version"], { home: home.dir });
        expect(run.exitCode).toBe(127);
        expect(run.stderr).toContain(`roster box build --agent ${name}`);
      }
    } finally {
      await home.cleanup();
    }
  });

  it("runs a task that reports its outcome with task_complete, and the host believes it once the run ended well", async () => {
    model.reset();
    model.play(
      {
        toolUses: [
          { name: "mcp__roster__task_complete", input: { note: "the report is written" } },
        ],
      },
      { text: "reported" },
    );
    const before = model.requests.length;
    const added = await deployment.roster(["task", "add", "elf", "write the report", "--json"]);
    expect(added.code, added.stderr).toBe(0);
    const task = JSON.parse(added.stdout) as { id: string };
    const served = await deployment.roster(
      ["server", "start", "--once", "--no-listen", "--no-console"],
      { timeoutMs: 300_000 },
    );
    expect(served.code, served.stderr).toBe(0);
    // the outcome tools are offered in a task's run only, as to pi
    const tools = (model.requests[before]?.body.tools ?? []).map((tool) => tool.name);
    expect(tools).toContain("mcp__roster__task_complete");
    expect(readTasks(deployment.paths, "elf").tasks.find((t) => t.id === task.id)).toMatchObject({
      state: "done",
    });
    expect(latestRecord(deployment.paths, "elf")).toMatchObject({
      kind: "task",
      agent: "claude",
      task_id: task.id,
    });
  }, 300_000);
});
