import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { readRecord, runDir } from "../../runner/records/run-records/run-record.ts";
import { readTasks, type Task } from "../../runner/records/task-list/store.ts";
import { testDocker } from "../support/docker.ts";
import { ModelServer, type Turn } from "../support/model-server.ts";
import { makeRosterRoot, type RosterRoot } from "../support/roster-root.ts";

const docker = await testDocker();

/**
 * Host-attested outcomes through the real server and real boxes: the run's
 * task_complete is believed only when the host saw the run end well — not
 * when it then hit its ceiling or had its model call refused, and not before
 * the proposals it filed are resolved.
 */
const complete = (note: string, usage?: Turn["usage"]): Turn => ({
  toolCalls: [{ name: "task_complete", arguments: { note } }],
  ...(usage ? { usage } : {}),
});

const proposeMessage: Turn = {
  toolCalls: [
    { name: "message_user", arguments: { text: "The numbers are in.", rationale: "they asked" } },
  ],
};

const GATED = `
[[action]]
name = "message-user"
executor = "message-user"
trust = "gate"
wake_on_resolve = true
`;

async function addTask(deployment: RosterRoot, prompt: string, ...flags: string[]): Promise<Task> {
  const added = await deployment.roster(["task", "add", "elf", prompt, ...flags, "--json"]);
  expect(added.code, added.stderr).toBe(0);
  return JSON.parse(added.stdout) as Task;
}
const taskNow = (deployment: RosterRoot, id: string) =>
  readTasks(deployment.paths, "elf").tasks.find((t) => t.id === id);
const once = (deployment: RosterRoot) =>
  deployment.roster(["server", "start", "--once", "--no-listen", "--no-console"], {
    timeoutMs: 150_000,
  });

describe.skipIf(!docker)("host-attested outcomes", () => {
  let model: ModelServer;
  let deployment: RosterRoot;

  beforeAll(async () => {
    model = await new ModelServer().start("127.0.0.1");
    deployment = await makeRosterRoot(model.baseUrl("127.0.0.1"), {
      modelKey: "ATTEST-KEY",
      extraOrg: GATED,
    });
  });
  beforeEach(() => model.reset());
  afterAll(async () => {
    await model?.stop();
    await deployment?.cleanup();
  });

  it("fails a task that reports complete and then hits its ceiling, and task show says why", async () => {
    // 9 seconds from the box's start: room for pi to start and report (about two seconds)
    const task = await addTask(deployment, "report, then keep talking", "--ceiling", "0.15");
    // reported at once, then the next answer takes far longer than the ceiling
    model.play(complete("all written"), { text: "still going", delayMs: 90_000 });
    const result = await once(deployment);
    expect(result.code, result.stderr).toBe(0);
    const run = /task t-\w+ of elf: failed \(run ([\w-]+), ceiling\)/.exec(result.stderr)?.[1];
    expect(run, result.stderr).toBeDefined();
    // the ceiling ended it, not the model's answer: the run's record says so
    expect(readRecord(runDir(deployment.paths.state, "elf", run ?? "?"))).toMatchObject({
      state: "failed",
      ended_by: "ceiling",
      ceiling_min: 0.15,
    });
    // and it was asking the model again when it did
    expect(model.remaining).toBe(0);
    expect(taskNow(deployment, task.id)).toMatchObject({
      state: "failed",
      note: 'failed: the run hit its 0.15-minute ceiling after reporting complete ("all written")',
    });

    const shown = await deployment.roster(["task", "show", task.id]);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toContain(`task      ${task.id} (failed, owner standing)`);
    expect(shown.stdout).toMatch(
      /run {7}[\w-]+, ended by ceiling; it reported complete: "all written"/,
    );
    expect(shown.stdout).toContain(
      "outcome   failed: the run hit its 0.15-minute ceiling after reporting complete",
    );
  });

  it("holds a task that reports complete with a pending proposal as needs-review, and settles it on approval", async () => {
    const task = await addTask(deployment, "tell the operator the numbers are in");
    model.play(proposeMessage, complete("told the operator"), { text: "Done." });
    const result = await once(deployment);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toMatch(/task t-\w+ of elf: needs-review \(proposals pending\)/);
    const held = taskNow(deployment, task.id);
    const gateId = /g-[0-9a-f]{8}/.exec(held?.note ?? "")?.[0] ?? "";
    expect(held).toMatchObject({
      state: "needs-review",
      note: `needs-review: reported complete, waiting on its proposal ${gateId} (message-user) is pending`,
    });
    // nothing runs it again meanwhile
    const asked = model.requests.length;
    expect((await once(deployment)).code).toBe(0);
    expect(model.requests.length).toBe(asked);
    expect(taskNow(deployment, task.id)?.state).toBe("needs-review");

    const approved = await deployment.roster(["approvals", "approve", gateId]);
    expect(approved.code, approved.stderr).toBe(0);
    expect(approved.stdout).toContain(`${gateId} executed`);
    expect(taskNow(deployment, task.id)).toMatchObject({
      state: "done",
      note: "told the operator",
    });
    const shown = await deployment.roster(["task", "show", task.id]);
    expect(shown.stdout).toContain("outcome   done: told the operator");
    await expectContinuation(gateId);
  });

  it("fails such a task when its proposal is denied, saying so", async () => {
    const task = await addTask(deployment, "tell the operator the bad news");
    model.play(proposeMessage, complete("told the operator"), { text: "Done." });
    expect((await once(deployment)).code).toBe(0);
    const gateId = /g-[0-9a-f]{8}/.exec(taskNow(deployment, task.id)?.note ?? "")?.[0] ?? "";
    expect(taskNow(deployment, task.id)?.state).toBe("needs-review");

    const denied = await deployment.roster(["approvals", "deny", gateId, "not", "today"]);
    expect(denied.code, denied.stderr).toBe(0);
    expect(taskNow(deployment, task.id)).toMatchObject({
      state: "failed",
      note: `failed: reported complete, but its proposal ${gateId} (message-user) was denied: not today`,
    });
    await expectContinuation(gateId);
  });

  /** wake_on_resolve files its continuation as before (taken off again, so no later run picks it up). */
  async function expectContinuation(gateId: string): Promise<void> {
    const next = readTasks(deployment.paths, "elf").tasks.find(
      (t) => t.filed_by === `gate:${gateId}`,
    );
    expect(next?.state).toBe("pending");
    expect((await deployment.roster(["task", "rm", next?.id ?? "?"])).code).toBe(0);
  }
});

describe.skipIf(!docker)("a task whose model call is refused after it reported complete", () => {
  let model: ModelServer;
  let deployment: RosterRoot;

  beforeAll(async () => {
    model = await new ModelServer().start("127.0.0.1");
    deployment = await makeRosterRoot(model.baseUrl("127.0.0.1"), {
      modelKey: "REFUSED-KEY",
      extraOrg: '\n[[budget.limit]]\ncurrency = "tokens"\nwindow = "day"\nmax = 40\n',
    });
  });
  afterAll(async () => {
    await model?.stop();
    await deployment?.cleanup();
  });

  it("is failed, not done, and not requeued", async () => {
    const task = await addTask(deployment, "report, then ask once more");
    // the report's call crosses the 40-token cap; the gateway refuses the next one
    model.play(complete("finished early", { prompt: 30, completion: 20 }), {
      text: "must never be sent",
    });
    const result = await once(deployment);
    expect(result.code, result.stderr).toBe(0);
    expect(model.requests).toHaveLength(1);
    expect(taskNow(deployment, task.id)).toMatchObject({
      state: "failed",
      note: expect.stringMatching(
        /^failed: its model call was refused at \S+: the model budget is used up \(tokens over day cap \(50\.0000\/40\.0000\)\) after reporting complete \("finished early"\)$/,
      ),
    });
  });
});
