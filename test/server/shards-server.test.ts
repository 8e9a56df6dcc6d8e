import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readDecisions } from "../../runner/boundary/gateway/audit/view.ts";
import type { GatewayState } from "../../runner/boundary/gateway/process/gateway.ts";
import { testDocker } from "../support/docker.ts";
import { ModelServer } from "../support/model-server.ts";
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

  beforeAll(async () => {
    model = await new ModelServer().start("127.0.0.1");
    deployment = await makeRosterRoot(model.baseUrl("127.0.0.1"), { gatewayExtra: "shards = 2" });
    server = await startRunServer(deployment);
  });
  afterAll(async () => {
    await server?.stop();
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
});
