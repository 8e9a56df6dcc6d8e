/**
 * `[telemetry] metrics_listen`: a real Prometheus scrapes a running `roster
 * server` while real runs and door requests happen — the runs by worker and
 * how they ended, the door's decisions by worker, verdict and rule, boxes,
 * approvals, the server's own memory and event-loop lag — and the series stay
 * few when a box sends 10,000 requests to distinct paths. Prometheus sends
 * the bearer token `metrics_credential` names; a box can't reach the port at
 * all, whatever name it uses (the door closes it as it closes the console's).
 */
import type { ChildProcess } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { storeCredential } from "../../runner/work/runs/credentials.ts";
import { until } from "../support/chat-turns.ts";
import { testDocker } from "../support/docker.ts";
import { reachFromBox } from "../support/host-port-reach.ts";
import { ModelServer } from "../support/model-server.ts";
import { type Prometheus, prometheusAvailable, startPrometheus } from "../support/prometheus.ts";
import { freePort, makeRosterRoot, type RosterRoot } from "../support/roster-root.ts";

const docker = await testDocker();
const TOKEN = "prometheus-scrape-token-0123456789";
const prometheus = prometheusAvailable();

/** Ten thousand requests from the box, eight at a time, each to a path of its own on a refused host. */
const FLOOD = `node --input-type=module -e '
let n = 0;
const one = async (w) => { for (let i = w; i < 10000; i += 8) { try { const r = await fetch("https://blocked.test/p/" + i + "?n=" + i); await r.arrayBuffer(); n++; } catch {} } };
await Promise.all([0,1,2,3,4,5,6,7].map(one));
console.log("sent " + n);
'`;

describe.skipIf(!docker || !prometheus)("metrics a real Prometheus scrapes from the server", () => {
  let model: ModelServer;
  let deployment: RosterRoot;
  let server: ChildProcess | undefined;
  let scraper: Prometheus;
  let port = 0;
  let said = "";
  const value = async (expression: string) => (await scraper.query(expression))[0]?.value;

  beforeAll(async () => {
    model = await new ModelServer().start("127.0.0.1");
    deployment = await makeRosterRoot(model.baseUrl("127.0.0.1"));
    port = await freePort();
    const orgFile = join(deployment.paths.config, "org.toml");
    const org = (await readFile(orgFile, "utf8")).replace(
      '[[grant]]\nname = "web-read"',
      `[[grant]]\nname = "no-blogs"\nverdict = "deny"\nmatch = { host = "blocked.test" }\n\n[[grant]]\nname = "web-read"`,
    );
    await writeFile(
      orgFile,
      `${org}\n[telemetry]\nmetrics_listen = "127.0.0.1:${port}"\nmetrics_credential = "prometheus"\n`,
    );
    await storeCredential(deployment.paths.vault, "prometheus", { key: TOKEN });
    const child = deployment.spawnRoster(["server", "start", "--no-listen"]);
    child.stderr.on("data", (chunk: Buffer) => {
      said += chunk.toString("utf8");
    });
    server = child;
    await until(
      () => said.includes("metrics on http://127.0.0.1:"),
      `the server's metrics (${said})`,
    );
    scraper = await startPrometheus(`127.0.0.1:${port}`, TOKEN);
  });
  afterAll(async () => {
    await scraper?.stop();
    const child = server;
    if (child) {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      await exited;
    }
    await model?.stop();
    await deployment?.cleanup();
  });

  it("counts runs and door decisions as they happen, and keeps the series few under 10,000 paths", async () => {
    for (let i = 0; i < 2; i++) {
      model.play({ text: `done ${i}` });
      const run = await deployment.roster(["run", "elf", `say done ${i}`]);
      expect(run.code, run.stderr).toBe(0);
    }
    model.play(
      { toolCalls: [{ name: "bash", arguments: { command: FLOOD } }] },
      { text: "flooded" },
    );
    const flood = await deployment.roster(["run", "elf", "send the requests"]);
    expect(flood.code, flood.stderr).toBe(0);
    expect(model.toolResults().at(-1)?.content).toContain("sent 10000");

    // the runs, from their records: three started and ended by the box's own exit
    await until(
      async () => (await value('roster_runs_ended_total{worker="elf",ended_by="exit"}')) === 3,
      "three ended runs in Prometheus",
    );
    expect(await value('roster_runs_started_total{worker="elf"}')).toBe(3);
    expect(await value('roster_run_duration_seconds_count{worker="elf"}')).toBe(3);
    // the door's decisions: every one of the 10,000 refused by its rule, as one series
    await until(
      async () =>
        ((await value(
          'roster_door_decisions_total{worker="elf",verdict="deny",rule="no-blogs"}',
        )) ?? 0) >= 10_000,
      "the door's 10,000 refusals in Prometheus",
    );
    // the model calls went through the door too, allowed by the model's grant
    expect(
      await value('sum(roster_door_decisions_total{worker="elf",verdict="allow"})'),
    ).toBeGreaterThan(0);
    expect(
      await value('sum(roster_door_exchange_seconds_count{verdict="deny"})'),
    ).toBeGreaterThanOrEqual(10_000);
    // bounded: no series per path or host, whatever the box sent
    expect(await value("count(roster_door_decisions_total)")).toBeLessThan(10);
    expect(await value('count({__name__=~"roster_door_.*"})')).toBeLessThan(60);
    const everything = await value('count({job="roster"})');
    expect(everything).toBeLessThan(600);
    // what the server holds now, and its own process
    expect(await value('roster_boxes_running{kind="task"}')).toBe(0);
    expect(await value("roster_approvals_waiting")).toBe(0);
    expect(await value("roster_server_nodejs_eventloop_lag_seconds")).toBeGreaterThanOrEqual(0);
    expect(await value("roster_server_process_resident_memory_bytes")).toBeGreaterThan(0);
    expect(await value("roster_gateway_process_resident_memory_bytes")).toBeGreaterThan(0);
    expect(await value("roster_door_metrics_up")).toBe(1);
  });

  it("is out of every box's reach: through the gateway and around it", async () => {
    const { answers, closed } = await reachFromBox(deployment, port, "/metrics");
    expect(answers[0]).toBe("403");
    expect(answers[1]).toBe("403");
    expect(answers[2]).toMatch(/^000 exit=(7|28)$/); // no route: a box has no network
    expect(closed).toBe(2);
  });
});
