import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { testDocker } from "../support/docker.ts";
import { ModelServer, type ScriptStep } from "../support/model-server.ts";
import { makeRosterRoot, type RosterRoot } from "../support/roster-root.ts";

const docker = await testDocker();

/** A turn that calls one tool, and a turn that answers with the last tool result. */
const callTool = (name: string, args: Record<string, unknown> = {}): ScriptStep => ({
  toolCalls: [{ name, arguments: args }],
});
const answerWithToolOutput: ScriptStep = (request) => {
  const tool = [...(request.body.messages ?? [])]
    .reverse()
    .find((message) => message.role === "tool");
  const content =
    typeof tool?.content === "string" ? tool.content : JSON.stringify(tool?.content ?? "");
  return { text: `TOOL OUTPUT:\n${content}` };
};

const GRANTS = `
[[action]]
name = "message-user"
executor = "message-user"
trust = "auto"

[[action]]
name = "email-send"
executor = "email"
trust = "gate"

[[action]]
name = "file-update"
executor = "self"
`;

describe.skipIf(!docker)(
  "action tools end to end: a real box, the gateway's action host, the desk",
  () => {
    let model: ModelServer;
    let deployment: RosterRoot;

    beforeAll(async () => {
      model = await new ModelServer().start("127.0.0.1");
      deployment = await makeRosterRoot(model.baseUrl("127.0.0.1"), { extraOrg: GRANTS });
    });
    beforeEach(() => model.reset());
    afterAll(async () => {
      await model?.stop();
      await deployment?.cleanup();
    });

    it("message_user runs at once, a gated email waits for the desk, and a later run reads the denial", async () => {
      // run 1: an auto action lands in the operator's inbox
      model.play(
        callTool("message_user", { text: "Weekly report: all green" }),
        answerWithToolOutput,
      );
      const first = await deployment.roster(["run", "elf", "tell me how the week went"]);
      expect(first.code, first.stderr).toBe(0);
      expect(first.stdout).toContain(
        'TOOL OUTPUT:\ndone: "message-user" ran. Result: delivered: inbox.',
      );
      const tools = (model.requests[0]?.body.tools ?? []).map((tool) => tool.function.name);
      expect(tools).toEqual(
        expect.arrayContaining(["message_user", "send_email", "check_gates", "file_update"]),
      );
      expect(tools).not.toContain("task_complete"); // not a task run
      const inbox = await deployment.roster(["inbox"]);
      expect(inbox.code, inbox.stderr).toBe(0);
      expect(inbox.stdout).toMatch(/Z elf: Weekly report: all green\n/);

      // run 2: the email is held; the model is told the gate id and to stop
      model.play(
        callTool("send_email", {
          to: ["boss@example.test"],
          subject: "Weekly numbers",
          body: "The numbers are in.",
          rationale: "the lead asked for them every Friday",
        }),
        answerWithToolOutput,
      );
      const second = await deployment.roster(["run", "elf", "send the weekly numbers"]);
      expect(second.code, second.stderr).toBe(0);
      expect(second.stdout).toMatch(
        /pending: gate g-[0-9a-f]{8} — held for human approval \(.+\)\. Stop here; a human decides; a later run sees the outcome in ~\/self\/journal\./,
      );
      const gateId = /g-[0-9a-f]{8}/.exec(second.stdout)?.[0] ?? "";
      const listed = await deployment.roster(["approvals", "ls"]);
      expect(listed.stdout).toMatch(
        new RegExp(`${gateId}\\s+pending\\s+elf .*email to boss@example.test: Weekly numbers`),
      );

      // the operator says no, with a note
      const denied = await deployment.roster(["approvals", "deny", gateId, "not now"]);
      expect(denied.code, denied.stderr).toBe(0);
      expect(denied.stdout).toBe(`${gateId} denied\n`);

      // run 3: the journal, mounted read-only, says what became of it
      model.play(
        {
          toolCalls: [{ name: "bash", arguments: { command: "cat ~/self/journal/events.jsonl" } }],
        },
        answerWithToolOutput,
      );
      const third = await deployment.roster(["run", "elf", "what became of the email?"]);
      expect(third.code, third.stderr).toBe(0);
      const denial = third.stdout
        .split("\n")
        .filter((line) => line.startsWith("{"))
        .map((line) => JSON.parse(line) as Record<string, unknown>)
        .find((event) => event.kind === "denied");
      expect(denial).toMatchObject({
        worker: "elf",
        kind: "denied",
        intent: "email-send",
        gate_id: gateId,
        detail: { note: "not now" },
      });

      // run 4: check_gates says the same in short lines
      model.play(callTool("check_gates"), answerWithToolOutput);
      const fourth = await deployment.roster(["run", "elf", "check your gates"]);
      expect(fourth.code, fourth.stderr).toBe(0);
      expect(fourth.stdout).toMatch(
        new RegExp(
          `^${gateId} email-send denied, by cli:\\S+ at [0-9: -]{16} — note: not now$`,
          "m",
        ),
      );
    });

    it("an approved proposal executes, and the next run is told so and finds it in its journal", async () => {
      // run 1: the worker reads its own worker.toml and proposes a narrower one against its hash
      let proposed = "";
      model.play(
        {
          toolCalls: [
            {
              name: "bash",
              arguments: {
                command: "cat ~/self/config/worker.toml; sha256sum ~/self/config/worker.toml",
              },
            },
          ],
        },
        (request) => {
          const tool = [...(request.body.messages ?? [])]
            .reverse()
            .find((message) => message.role === "tool");
          const output =
            typeof tool?.content === "string" ? tool.content : JSON.stringify(tool?.content ?? "");
          const hash = /([0-9a-f]{64})\s+\S*worker\.toml/.exec(output)?.[1] ?? "";
          const current = output.slice(0, output.lastIndexOf(hash)).replace(/\n$/, "");
          proposed = `${current.trimEnd()}\n\n[box]\npids_limit = 512\n`;
          return {
            toolCalls: [
              {
                name: "file_update",
                arguments: {
                  path: "config/worker.toml",
                  base_hash: hash,
                  content: proposed,
                  rationale: "512 processes are plenty for me",
                },
              },
            ],
          };
        },
        answerWithToolOutput,
      );
      const first = await deployment.roster(["run", "elf", "make your box smaller"]);
      expect(first.code, first.stderr).toBe(0);
      const gateId = /pending: gate (g-[0-9a-f]{8})/.exec(first.stdout)?.[1] ?? "";
      expect(gateId, first.stdout).not.toBe("");

      const shown = await deployment.roster(["approvals", "show", gateId]);
      expect(shown.stdout).toContain("+[box]\n+pids_limit = 512");
      const approved = await deployment.roster(["approvals", "approve", gateId]);
      expect(approved.code, approved.stderr).toBe(0);
      expect(approved.stdout).toMatch(new RegExp(`^${gateId} executed: .*"status":"ok"`));
      expect((await deployment.roster(["validate"])).code).toBe(0);

      // run 2: the compiled prompt names the outcome, and the journal has it
      model.play(
        {
          toolCalls: [{ name: "bash", arguments: { command: "cat ~/self/journal/events.jsonl" } }],
        },
        answerWithToolOutput,
      );
      const asked = model.requests.length;
      const second = await deployment.roster(["run", "elf", "what became of your edit?"]);
      expect(second.code, second.stderr).toBe(0);
      const system = JSON.stringify(model.requests[asked]?.body.messages?.[0] ?? "");
      expect(system).toContain("OUTCOMES SINCE YOUR LAST RUN");
      expect(system).toContain(`executed file-update (${gateId})`);
      const executed = second.stdout
        .split("\n")
        .filter((line) => line.startsWith("{"))
        .map((line) => JSON.parse(line) as Record<string, unknown>)
        .find((event) => event.kind === "executed" && event.gate_id === gateId);
      expect(executed).toMatchObject({ intent: "file-update", detail: { status: "ok" } });
    });
  },
);
