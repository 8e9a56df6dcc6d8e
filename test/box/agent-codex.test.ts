import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type AgentDeployment,
  agentDeployment,
  expectedKeySearch,
  expectRunAfterward,
  keySearch,
} from "../support/agent-deployment.ts";
import { testDocker } from "../support/docker.ts";
import {
  outputText,
  type RecordedRequest,
  ResponsesModelServer,
  type Turn,
} from "../support/responses-model-server.ts";
import { latestRecord, type RosterRoot } from "../support/roster-root.ts";
import { termRouter } from "../support/term-router.ts";

const docker = await testDocker();

/**
 * A worker whose agent is Codex: the real CLI in a real box, its model calls
 * through the real gateway to a stand-in for OpenAI's Responses API, with our
 * tools from the box's MCP server (which Codex offers the model behind its
 * tool search). Its first run builds the agent's layer on the box image
 * (agent-image.ts).
 */
const REAL_KEY = "sk-proj-the-real-one-never-in-a-box";

/** The text of the newest tool output the model was sent. */
const lastToolResult = (request: RecordedRequest): string => {
  const outputs = (request.body.input ?? []).filter((item) => item.type === "function_call_output");
  return outputText(outputs.at(-1)?.output);
};

/** One of our tools called the way Codex offers them after a search: in the server's namespace. */
const ours = (name: string, args: Record<string, unknown>): Turn => ({
  toolCalls: [{ name, namespace: "mcp__roster", arguments: args }],
});

describe.skipIf(!docker)("Codex as a worker's agent, in a real box, through the door", () => {
  let model: ResponsesModelServer;
  let agent: AgentDeployment;
  let deployment: RosterRoot;

  beforeAll(async () => {
    model = await new ResponsesModelServer().start("127.0.0.1");
    agent = await agentDeployment({
      agent: "codex",
      provider: "openai",
      model: "gpt-5.5",
      baseUrl: model.baseUrl("127.0.0.1"),
      key: REAL_KEY,
      // roster ships no price for this model: the operator's own, as org.toml lets them say it
      extraOrg: '\n[[budget.price]]\nmodel = "gpt-5*"\ninput = 1.25\noutput = 10\n',
    });
    deployment = agent.deployment;
  }, 600_000);
  afterAll(async () => {
    await model?.stop();
    await agent?.stop();
  });

  it("runs the shell and our tools, proposes to the desk, and the box never holds the key", async () => {
    const url = agent.pageUrl;
    model.play(
      {
        toolCalls: [
          {
            name: "exec_command",
            arguments: {
              cmd: keySearch(REAL_KEY),
            },
          },
        ],
      },
      // Codex defers MCP tools: the model finds ours with its tool search first
      { toolCalls: [{ name: "", search: { query: "fetch pages, message user" } }] },
      ours("fetch_pages", { urls: [url] }),
      (request) =>
        ours("message_user", {
          text: `The page says: ${lastToolResult(request).includes("judged at the door")}`,
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
    expect(run.stderr).toMatch(/→ shell /);
    expect(run.stderr).toMatch(/→ fetch_pages /);
    expect(run.stderr).toMatch(/→ message_user /);

    const calls = model.modelCalls;
    expect(calls).toHaveLength(5);
    // the real key was added in transit; the box sent none
    for (const call of calls) expect(call.headers.authorization).toBe(`Bearer ${REAL_KEY}`);
    const tools = (calls[0]?.body.tools ?? []).map((tool) => tool.name ?? tool.type);
    expect(tools).toContain("exec_command");
    expect(tools).not.toContain("web_search");
    // roster's part of the prompt reached it, as developer instructions
    expect(JSON.stringify(calls[0]?.body.input)).toContain("elf");

    // the shell ran in the box, which holds the key nowhere: not in its environment, not in a file
    expect(lastToolResult(calls[1] as RecordedRequest)).toContain(expectedKeySearch(REAL_KEY));
    expect(lastToolResult(calls[3] as RecordedRequest)).toContain("judged at the door");
    expect(lastToolResult(calls[4] as RecordedRequest)).toMatch(/held|gate|approv/i);

    // the proposal waits on the desk, the door audited every call, runs show tells of it
    await expectRunAfterward(deployment, {
      agent: "codex",
      title: "Codex",
      modelPath: "/v1/responses",
      modelRule: "model:openai",
      calls: 5,
    });
  }, 900_000);

  it("is stopped at its ceiling like any run", async () => {
    model.reset();
    model.play({ toolCalls: [{ name: "exec_command", arguments: { cmd: "sleep 600" } }] });
    const started = Date.now();
    const run = await deployment.roster(["run", "--ceiling", "0.1", "elf", "wait a long time"], {
      timeoutMs: 300_000,
    });
    expect(run.code, `${run.stderr}\n${run.stdout}`).toBe(2);
    expect(latestRecord(deployment.paths, "elf")).toMatchObject({
      agent: "codex",
      ended_by: "ceiling",
    });
    console.log(`Codex with a 0.1-minute ceiling stopped after ${Date.now() - started} ms`);
  }, 300_000);

  it("keeps a warm session: two turns on one live Codex, the second with the first's history", async () => {
    model.reset();
    // the double keeps every call it was sent: this case's are the ones after these
    const earlier = model.modelCalls.length;
    model.play(
      {
        toolCalls: [
          { name: "exec_command", arguments: { cmd: "echo turn-one-was-here | tee ~/store/mark" } },
        ],
      },
      { text: "first turn done" },
      (request) => ({
        text: `second turn saw ${JSON.stringify(request.body.input).includes("first turn done") ? "the first" : "nothing"}`,
      }),
    );
    const { router, send: sendTo } = termRouter(deployment);
    const send = (text: string) => sendTo("term-codex-elf", text);
    const first = await send("leave a mark in your store");
    const second = await send("what did you say before?");
    expect(first.result.texts.join("")).toBe("first turn done");
    expect(first.result.tools).toEqual(["shell"]);
    expect(second.result.texts.join("")).toBe("second turn saw the first");
    expect(second.runId).toBe(first.runId);
    const ends = await router.closeAll();
    expect(ends).toEqual([expect.objectContaining({ turns: 2, error: undefined })]);
    const record = latestRecord(deployment.paths, "elf");
    expect(record).toMatchObject({ kind: "session", agent: "codex", turns: 2 });

    const calls = model.modelCalls.slice(earlier);
    expect(calls).toHaveLength(3);
    // the session's turns went through the door like a run's, with the key added there
    for (const call of calls) expect(call.headers.authorization).toBe(`Bearer ${REAL_KEY}`);
    // the thread was started with the worker's model and roster's part of the prompt
    expect(calls[0]?.body.model).toBe("gpt-5.5");
    expect(JSON.stringify(calls[0]?.body.input)).toContain("elf");
    expect(lastToolResult(calls[1] as RecordedRequest)).toContain("turn-one-was-here");
    // runs show reads the session's app-server stream as it reads a run's
    const shown = await deployment.roster(["runs", "show", record?.id ?? ""]);
    expect(shown.stdout).toMatch(/^worker {4}elf \(agent Codex\)$/m);
    expect(shown.stdout).toContain("leave a mark in your store");
    expect(shown.stdout).toContain("tool shell");
    expect(shown.stdout).toContain("assistant: second turn saw the first");
  }, 600_000);
});
