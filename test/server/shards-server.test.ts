import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readDecisions } from "../../runner/boundary/gateway/audit/view.ts";
import type { GatewayState } from "../../runner/boundary/gateway/process/gateway.ts";
import { traceparentOf } from "../../runner/ground/telemetry/tracing.ts";
import { until } from "../support/chat-turns.ts";
import { testDocker } from "../support/docker.ts";
import { ModelServer } from "../support/model-server.ts";
import { OtlpReceiver } from "../support/otlp-receiver.ts";
import { makeRosterRoot, type RosterRoot } from "../support/roster-root.ts";
import { type RunServer, startRunServer } from "../support/run-server.ts";

/**
 * A deployment made by `roster init` with `[gateway] shards = 2`: the
 * server's gateway starts two shards, and runs handed to the server reach
 * their model through them, every request audited as its run's.
 */
const docker = await testDocker();

describe.skipIf(!docker)("a server whose gateway has shards", () => {
  let model: ModelServer;
  let deployment: RosterRoot;
  let server: RunServer | undefined;
  let collector: OtlpReceiver;

  beforeAll(async () => {
    model = await new ModelServer().start("127.0.0.1");
    collector = await OtlpReceiver.start();
    deployment = await makeRosterRoot(model.baseUrl("127.0.0.1"), {
      gatewayExtra: "shards = 2",
      extraOrg: `[telemetry]\notlp_endpoint = "${collector.url}"\n`,
    });
    server = await startRunServer(deployment);
  });
  afterAll(async () => {
    await server?.stop();
    await model?.stop();
    await collector?.stop();
    await deployment?.cleanup();
  });

  it("answers two runs at once through the gateway's shards", async () => {
    const state = JSON.parse(
      readFileSync(join(deployment.paths.state, "gateway.json"), "utf8"),
    ) as GatewayState;
    const children = execFileSync("pgrep", ["-a", "-P", String(state.pid)], { encoding: "utf8" })
      .trim()
      .split("\n");
    expect(children.filter((line) => line.includes("gateway start --shard"))).toHaveLength(2);

    model.play({ text: "through a shard" }, { text: "through a shard" });
    const runs = await Promise.all([
      deployment.roster(["run", "elf", "first"]),
      deployment.roster(["run", "elf", "second"]),
    ]);
    for (const run of runs) {
      expect(run.code, `${run.stderr}\n${server?.log()}`).toBe(0);
      expect(run.stdout).toBe("through a shard\n");
    }
    const ids = runs.map((run) => /run (\S+): done/.exec(run.stderr)?.[1] ?? "");
    const lines = readDecisions(deployment.paths.audit);
    for (const id of ids) {
      const mine = lines.filter((line) => line.run_id === id && line.verdict === "allow");
      expect(mine.length, `audit lines of ${id}`).toBeGreaterThan(0);
    }
  });

  it("traces the action host's decisions on a run a shard serves, each once, from the gateway", async () => {
    model.play(
      { toolCalls: [{ name: "file_task", arguments: { prompt: "look again tomorrow" } }] },
      { text: "filed" },
    );
    const run = await deployment.roster(["run", "elf", "file a task"]);
    expect(run.code, `${run.stderr}\n${server?.log()}`).toBe(0);
    const id = /run (\S+): done/.exec(run.stderr)?.[1] ?? "";
    const [, traceId] = traceparentOf(id).split("-");
    const decided = await until(() => {
      const found = collector.spans.filter(
        (span) =>
          span.traceId === traceId &&
          span.name.startsWith("action ") &&
          span.attributes["roster.intent"] === "file-task",
      );
      return found.length ? found : undefined;
    }, "the action host's decision at the collector");
    // a decision the gateway traced twice would come in its next batch: give it the time
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    const names = collector.spans
      .filter(
        (span) => span.traceId === traceId && span.attributes["roster.intent"] === "file-task",
      )
      .map((span) => span.name);
    expect(decided.every((span) => span.service === "roster-gateway")).toBe(true);
    expect(names).toEqual([...new Set(names)]);
  });
});
