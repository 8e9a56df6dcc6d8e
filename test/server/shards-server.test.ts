import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readDecisions } from "../../runner/boundary/gateway/audit/view.ts";
import type { GatewayState } from "../../runner/boundary/gateway/process/gateway.ts";
import { until } from "../support/chat-turns.ts";
import { testDocker } from "../support/docker.ts";
import { ModelServer } from "../support/model-server.ts";
import { makeRosterRoot, type RosterRoot } from "../support/roster-root.ts";

/**
 * A deployment made by `roster init` with `[gateway] shards = 2`: the
 * server's gateway starts two shards, and runs handed to the server reach
 * their model through them, every request audited as its run's.
 */
const docker = await testDocker();

describe.skipIf(!docker)("a server whose gateway has shards", () => {
  let model: ModelServer;
  let deployment: RosterRoot;
  let server: ReturnType<RosterRoot["spawnRoster"]> | undefined;
  let serverLog = "";

  beforeAll(async () => {
    model = await new ModelServer().start("127.0.0.1");
    deployment = await makeRosterRoot(model.baseUrl("127.0.0.1"), { gatewayExtra: "shards = 2" });
    server = deployment.spawnRoster(["server", "start", "--no-listen", "--no-console"]);
    server.stderr.on("data", (chunk: Buffer) => {
      serverLog += chunk.toString();
    });
    await until(
      () => existsSync(join(deployment.paths.state, "server.sock")) && /gateway on/.test(serverLog),
      "the server to take runs",
      60_000,
    );
  });
  afterAll(async () => {
    if (server && server.exitCode === null && server.signalCode === null) {
      const stopped = new Promise((resolve) => server?.once("exit", resolve));
      server.kill("SIGTERM");
      await stopped;
    }
    await model?.stop();
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
      expect(run.code, `${run.stderr}\n${serverLog}`).toBe(0);
      expect(run.stdout).toBe("through a shard\n");
    }
    const ids = runs.map((run) => /run (\S+): done/.exec(run.stderr)?.[1] ?? "");
    const lines = readDecisions(deployment.paths.audit);
    for (const id of ids) {
      const mine = lines.filter((line) => line.run_id === id && line.verdict === "allow");
      expect(mine.length, `audit lines of ${id}`).toBeGreaterThan(0);
    }
  });
});
