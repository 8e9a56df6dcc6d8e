/**
 * `[telemetry] otlp_endpoint`: a real run's trace reaches a collector over
 * OTLP/HTTP — the run's span, and under it its model calls and tool calls
 * (from pi's events) and the door's decisions (from the gateway, another
 * process, knowing only the run id) — with no path, header value or body in
 * any attribute; and nothing at all is sent when no endpoint is set.
 */
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { traceparentOf } from "../../runner/ground/telemetry/tracing.ts";
import { until } from "../support/chat-turns.ts";
import { ROSTER_BIN } from "../support/cli.ts";
import { testDocker } from "../support/docker.ts";
import { ModelServer } from "../support/model-server.ts";
import { OtlpReceiver } from "../support/otlp-receiver.ts";
import { spawnInPty } from "../support/pty.ts";
import { makeRosterRoot, type RosterRoot } from "../support/roster-root.ts";

const docker = await testDocker();

/** message_user waits for a human at the desk, who decides at the CLI. */
const GATED = `
[[action]]
name = "message-user"
executor = "message-user"
trust = "gate"
`;

const CURL = 'curl -s -o /dev/null -w "%{http_code}" "https://blocked.test/secret-path?key=abc123"';

describe.skipIf(!docker)("a run's trace, exported to a collector", () => {
  let model: ModelServer;
  let deployment: RosterRoot;
  let collector: OtlpReceiver;
  let orgFile: string;
  let org: string;

  beforeAll(async () => {
    model = await new ModelServer().start("127.0.0.1");
    collector = await OtlpReceiver.start();
    deployment = await makeRosterRoot(model.baseUrl("127.0.0.1"));
    orgFile = join(deployment.paths.config, "org.toml");
    org = `${(await readFile(orgFile, "utf8")).replace(
      '[[grant]]\nname = "web-read"',
      `[[grant]]\nname = "no-blogs"\nverdict = "deny"\nmatch = { host = "blocked.test" }\n\n[[grant]]\nname = "web-read"`,
    )}${GATED}`;
  });
  afterAll(async () => {
    await model?.stop();
    await collector?.stop();
    await deployment?.cleanup();
  });

  const runWithTool = async (action = false) => {
    model.play(
      { toolCalls: [{ name: "bash", arguments: { command: CURL } }] },
      ...(action
        ? [
            {
              toolCalls: [
                { name: "file_task", arguments: { prompt: "look at the blog again tomorrow" } },
              ],
            },
            {
              toolCalls: [
                {
                  name: "message_user",
                  arguments: { text: "The blog is blocked.", rationale: "asked" },
                },
              ],
            },
          ]
        : []),
      { text: "done" },
    );
    const run = await deployment.roster(["run", "elf", "try the blog", "--json"]);
    expect(run.code, run.stderr).toBe(0);
    const ls = await deployment.roster(["runs", "ls", "--worker", "elf", "--json"]);
    const [newest] = JSON.parse(ls.stdout) as Array<{ id: string }>;
    if (!newest) throw new Error("no run recorded");
    return newest.id;
  };

  it("sends the run's span with its model, tool and door spans under it", async () => {
    await writeFile(orgFile, `${org}\n[telemetry]\notlp_endpoint = "${collector.url}"\n`);
    const runId = await runWithTool(true);
    expect(model.toolResults().find((one) => one.content === "403")).toBeDefined();
    const [, traceId, runSpanId] = traceparentOf(runId).split("-");
    const ofRun = () => collector.spans.filter((span) => span.traceId === traceId);
    // the gateway's spans leave with its next batch: wait for the door's refusal
    await until(
      () =>
        ofRun().some((span) => span.name === "door deny") &&
        ofRun().some((s) => s.name.startsWith("run ")),
      "the run's spans at the collector",
    );
    const spans = ofRun();
    const run = spans.find((span) => span.name === "run elf");
    expect(run).toMatchObject({ spanId: runSpanId, parentSpanId: "", service: "roster" });
    expect(run?.attributes).toMatchObject({ "roster.run.id": runId, "roster.ended_by": "exit" });
    const under = (name: string) =>
      spans.filter((span) => span.name === name && span.parentSpanId === runSpanId);
    expect(under("model call")).toHaveLength(4);
    expect(under("tool bash")).toHaveLength(1);
    expect(under("tool file_task")).toHaveLength(1);
    // the action host decided the proposal in the gateway's process: under the run too
    const actions = spans.filter(
      (span) => span.name.startsWith("action ") && span.parentSpanId === runSpanId,
    );
    expect(actions.map((span) => span.attributes["roster.intent"])).toContain("file-task");
    // a proposal filed for the desk and approved at the CLI: that process's decisions join the run
    const [filed] = actions.filter((span) => span.name === "action gate-filed");
    const gate = String(filed?.attributes["roster.gate"]);
    const approved = await deployment.roster(["approvals", "approve", gate]);
    expect(approved.stdout, approved.stderr).toContain(`${gate} executed`);
    const decided = await until(() => {
      const found = ofRun().filter((span) => span.attributes["roster.gate"] === gate);
      return found.some((span) => span.name === "action executed") ? found : undefined;
    }, "the CLI's decision at the collector");
    expect(
      decided
        .filter((span) => span.service === "roster")
        .map((span) => [span.name, span.parentSpanId]),
    ).toEqual([
      ["action approved", runSpanId],
      ["action executed", runSpanId],
    ]);
    const [refused] = under("door deny");
    expect(refused?.service).toBe("roster-gateway");
    expect(refused?.attributes).toMatchObject({
      "roster.rule": "no-blogs",
      "roster.verdict": "deny",
      "server.address": "blocked.test",
      "http.response.status_code": 403,
    });
    // the model calls went through the door too, each a span of the run
    expect(under("door allow").length).toBeGreaterThanOrEqual(2);
    // every span lies within the run's
    for (const span of spans.filter((one) => one !== run)) {
      expect(span.startNs >= (run?.startNs ?? 0n) - 5_000_000n).toBe(true);
    }
    // no path, query, header value or body in any attribute
    const said = JSON.stringify(spans.map((span) => span.attributes));
    for (const secret of ["secret-path", "abc123", "authorization", "Bearer"])
      expect(said).not.toContain(secret);
  });

  it("gives a warm session a span per turn, its model calls under each", async () => {
    await writeFile(orgFile, `${org}\n[telemetry]\notlp_endpoint = "${collector.url}"\n`);
    model.play({ text: "First answer." }, { text: "Second answer." });
    const pty = spawnInPty([process.execPath, ROSTER_BIN, "talk", "elf", "--idle", "60"], {
      ROSTER_ROOT: deployment.root,
    });
    try {
      await pty.waitFor(/Ctrl-D ends/);
      pty.write("first question\n");
      await pty.waitFor(/elf> First answer\.\n/);
      pty.write("second question\n");
      await pty.waitFor(/elf> Second answer\.\n/);
      pty.write("\x04");
      expect(await pty.exited).toBe(0);
    } finally {
      pty.kill();
    }
    const sessions = () =>
      collector.spans.filter((span) => span.attributes["roster.run.kind"] === "session");
    const [session] = await until(
      () => (sessions().length ? sessions() : undefined),
      "the session's span",
    );
    const ofIt = collector.spans.filter((span) => span.traceId === session?.traceId);
    const turns = ofIt.filter((span) => span.name === "session turn");
    expect(turns.map((turn) => turn.parentSpanId)).toEqual([session?.spanId, session?.spanId]);
    for (const turn of turns)
      expect(
        ofIt.filter((span) => span.name === "model call" && span.parentSpanId === turn.spanId),
      ).toHaveLength(1);
  });

  it("sends nothing when no endpoint is set", async () => {
    await writeFile(orgFile, org);
    const before = collector.requests;
    const runId = await runWithTool();
    // the first run's gateway sent what it held as it stopped: whatever came since is this run's
    const [, traceId] = traceparentOf(runId).split("-");
    expect(collector.spans.filter((span) => span.traceId === traceId)).toEqual([]);
    expect(collector.requests).toBe(before);
  });
});
