import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readTasks } from "../../runner/records/task-list/store.ts";
import { testDocker } from "../support/docker.ts";
import { ModelServer, type RecordedRequest, type Turn, textOf } from "../support/model-server.ts";
import { makeRosterRoot, type RosterRoot } from "../support/roster-root.ts";

/**
 * Standing and pacing through the real server: what the worker files on its
 * own waits while its budget stands at or above the soft stop, with the
 * reason on the task; what the operator files runs. The spend is real: the
 * scripted model reports token usage and the gateway meters it.
 */
const docker = await testDocker();

const taskOf = (request: RecordedRequest) =>
  textOf(request.body.messages?.find((m) => m.role === "user")?.content);
/** Whether the model already called this tool in the conversation so far. */
const hasToolResult = (request: RecordedRequest, name: string) =>
  (request.body.messages ?? []).some(
    (message) => message.role === "assistant" && JSON.stringify(message).includes(name),
  );

describe.skipIf(!docker)("standing and pacing", () => {
  let model: ModelServer;
  let deployment: RosterRoot;

  beforeAll(async () => {
    model = await new ModelServer().start("127.0.0.1");
    deployment = await makeRosterRoot(model.baseUrl("127.0.0.1"), {
      modelKey: "SERVER-KEY",
      extraOrg: '[[action]]\nname = "file-task"\nexecutor = "task"\ntrust = "auto"\n',
    });
    await writeFile(
      join(deployment.paths.config, "workers/elf/worker.toml"),
      'name = "elf"\n\n[[budget.limit]]\ncurrency = "tokens"\nwindow = "day"\nmax = 1000\n',
    );
  });
  afterAll(async () => {
    await model?.stop();
    await deployment?.cleanup();
  });

  it("holds a proactive task at 88% of a limit with its reason, and runs an owner task", async () => {
    // the operator's first task spends 850 of the day's 1000 tokens and, on its own
    // initiative, files a follow-up for later
    const step = (request: RecordedRequest): Turn => {
      const task = taskOf(request);
      if (hasToolResult(request, "task_complete")) return { text: "ok" };
      if (task.includes("weekly report")) {
        if (!hasToolResult(request, "file_task"))
          return {
            toolCalls: [{ name: "file_task", arguments: { prompt: "tidy the archive" } }],
            usage: { prompt: 800, completion: 50 },
          };
        return { toolCalls: [{ name: "task_complete", arguments: { note: "report sent" } }] };
      }
      if (task.includes("urgent fix"))
        return { toolCalls: [{ name: "task_complete", arguments: { note: "fixed" } }] };
      return { toolCalls: [{ name: "task_complete", arguments: { note: "tidied" } }] };
    };
    model.play(...Array.from({ length: 12 }, () => step));
    const first = await deployment.roster(["task", "add", "elf", "weekly report"]);
    expect(first.code, first.stderr).toBe(0);
    const once = await deployment.roster(["server", "start", "--once"]);
    expect(once.code, once.stderr).toBe(0);
    const afterFirst = readTasks(deployment.paths, "elf").tasks;
    expect(afterFirst.find((t) => t.prompt === "weekly report")).toMatchObject({
      state: "done",
      standing: "owner",
    });
    const proactive = afterFirst.find((t) => t.prompt === "tidy the archive");
    expect(proactive).toMatchObject({
      standing: "proactive",
      filed_by: expect.stringMatching(/^run:/),
    });

    const budget = await deployment.roster(["budget", "--json", "--worker", "elf"]);
    // 850 for the first call, 15 for each of the two after it
    expect(JSON.parse(budget.stdout.trim().split("\n")[0] ?? "{}")).toMatchObject({
      used: 880,
      max: 1000,
    });

    // now the operator asks for something: it runs; the worker's own idea waits
    const urgent = await deployment.roster(["task", "add", "elf", "urgent fix"]);
    expect(urgent.code, urgent.stderr).toBe(0);
    const asked = model.requests.length;
    const second = await deployment.roster(["server", "start", "--once"]);
    expect(second.code, second.stderr).toBe(0);
    const now = readTasks(deployment.paths, "elf").tasks;
    expect(now.find((t) => t.prompt === "urgent fix")).toMatchObject({
      state: "done",
      note: "fixed",
    });
    expect(now.find((t) => t.prompt === "tidy the archive")).toMatchObject({
      state: "pending",
      note: expect.stringMatching(
        /^waiting: budget org\/elf tokens\/day at 88% of its limit \(proactive tasks wait from 80%; it resets /,
      ),
    });
    expect(model.requests.slice(asked).some((r) => taskOf(r).includes("tidy"))).toBe(false);
    const listed = await deployment.roster(["task", "ls", "elf"]);
    expect(listed.stdout).toMatch(
      /pending .*tidy the archive\s+\[waiting: budget org\/elf tokens\/day at 88%/,
    );
  });
});
