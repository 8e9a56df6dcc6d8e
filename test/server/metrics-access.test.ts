/**
 * Who may read `[telemetry] metrics_listen`, on a deployment fresh from
 * `roster init` whose one run has finished (its run index has no folder
 * yet): a scrape without the bearer token `metrics_credential` names is
 * refused, as is one whose Host header is not the listener's own (a page that
 * rebinds a name of its own to loopback); the right token gets the numbers,
 * the run counted. A credential missing from the vault refuses every scrape
 * and the server's log says why. A real `roster server start`; no box runs.
 */
import type { ChildProcess } from "node:child_process";
import { rmSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RosterPaths, rosterPaths } from "../../runner/ground/config/paths.ts";
import { newRunId, runDir, writeRecord } from "../../runner/records/run-records/run-record.ts";
import { storeCredential } from "../../runner/work/runs/credentials.ts";
import { until } from "../support/chat-turns.ts";
import { runRoster, spawnRoster } from "../support/cli.ts";
import { freePort, pointAtScriptedModel } from "../support/roster-root.ts";

const TOKEN = "scrape-token-0123456789abcdef";
const tomorrow = () => `${new Date(Date.now() + 86_400_000).toISOString().slice(0, 19)}Z`;

interface Answer {
  status: number;
  body: string;
}

/** One GET /metrics with exactly these headers (a scraper's, or a rebound page's Host). */
function scrape(port: number, headers: Record<string, string>): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: "127.0.0.1", port, path: "/metrics", headers, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("end", () =>
          resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString("utf8") }),
        );
      },
    );
    req.on("error", reject);
    req.end();
  });
}

describe("the metrics listener on a fresh deployment", () => {
  let root: string;
  let paths: RosterPaths;
  let port: number;
  let server: ChildProcess | undefined;
  let said = "";
  const own = () => ({ host: `127.0.0.1:${port}` });

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), "roster-metrics-"));
    paths = rosterPaths({ ROSTER_ROOT: root });
    const init = await runRoster(["init"], { ROSTER_ROOT: root });
    expect(init.code, init.stderr).toBe(0);
    port = await freePort();
    const consoleAt = await freePort();
    await pointAtScriptedModel(paths, "http://127.0.0.1:9/v1", {
      extraOrg: `[console]\nlisten = "127.0.0.1:${consoleAt}"\n\n[telemetry]\nmetrics_listen = "127.0.0.1:${port}"\nmetrics_credential = "metrics"\n`,
    });
    await storeCredential(paths.vault, "metrics", { key: TOKEN });
    // one run that finished, as `roster run` leaves it
    const id = newRunId();
    const started = new Date(Date.now() - 3000).toISOString();
    await writeRecord(runDir(paths.state, "elf", id), {
      id,
      worker: "elf",
      kind: "box",
      state: "done",
      started_at: started,
      ended_at: new Date().toISOString(),
      ended_by: "exit",
      exit_code: 0,
    });
    // a task for tomorrow: it waits on elf's list, and the server does not run it
    const task = await runRoster(["task", "add", "elf", "--at", tomorrow(), "later"], {
      ROSTER_ROOT: root,
    });
    expect(task.code, task.stderr).toBe(0);
    const child = spawnRoster(["server", "start", "--no-listen"], { ROSTER_ROOT: root });
    child.stderr.on("data", (chunk: Buffer) => {
      said += chunk.toString("utf8");
    });
    server = child;
    await until(() => said.includes(`metrics on http://127.0.0.1:${port}/metrics`), said, 30_000);
  });
  afterAll(async () => {
    const child = server;
    if (child && child.exitCode === null) {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      await exited;
    }
    if (root) await rm(root, { recursive: true, force: true });
  });

  it("answers the token's holder with the numbers, the finished run counted", async () => {
    const answer = await scrape(port, { ...own(), authorization: `Bearer ${TOKEN}` });
    expect(answer.status, answer.body).toBe(200);
    expect(answer.body).toContain('roster_runs_started_total{worker="elf"} 1');
    expect(answer.body).toContain('roster_runs_ended_total{worker="elf",ended_by="exit"} 1');
    expect(answer.body).toContain("roster_approvals_waiting 0");
    expect(answer.body).toContain('roster_tasks_waiting{worker="elf"} 1');
    // a list that changed is read again
    const more = await runRoster(["task", "add", "elf", "--at", tomorrow(), "later too"], {
      ROSTER_ROOT: root,
    });
    expect(more.code, more.stderr).toBe(0);
    const again = await scrape(port, { ...own(), authorization: `Bearer ${TOKEN}` });
    expect(again.body).toContain('roster_tasks_waiting{worker="elf"} 2');
    // localhost is this listener too, to a scraper on this machine
    const local = await scrape(port, {
      host: `localhost:${port}`,
      authorization: `Bearer ${TOKEN}`,
    });
    expect(local.status).toBe(200);
  });

  it("refuses a scrape without the token, or with another", async () => {
    const none = await scrape(port, own());
    expect(none.status).toBe(401);
    expect(none.body).toContain("metrics_credential");
    expect(none.body).not.toContain("roster_runs_started_total");
    const wrong = await scrape(port, { ...own(), authorization: `Bearer ${TOKEN}x` });
    expect(wrong.status).toBe(401);
  });

  it("refuses a Host that is not its own address and port, token or not", async () => {
    for (const host of [`rebound.example:${port}`, `127.0.0.1:${port + 1}`, "127.0.0.2"]) {
      const answer = await scrape(port, { host, authorization: `Bearer ${TOKEN}` });
      expect(answer.status, host).toBe(421);
      expect(answer.body).not.toContain("roster_runs_started_total");
    }
  });

  it("refuses every scrape while the credential is missing, and the log says why", async () => {
    rmSync(join(paths.vault, "metrics.json"));
    const answer = await scrape(port, { ...own(), authorization: `Bearer ${TOKEN}` });
    expect(answer.status).toBe(503);
    await until(
      () => said.includes('telemetry.metrics_credential names "metrics"'),
      "the server's log to say why",
    );
    await storeCredential(paths.vault, "metrics", { key: TOKEN });
    expect((await scrape(port, { ...own(), authorization: `Bearer ${TOKEN}` })).status).toBe(200);
  });
});
