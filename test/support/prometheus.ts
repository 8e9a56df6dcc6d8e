/**
 * A real Prometheus (Debian's package, not a stand-in) scraping one target
 * every second, and its HTTP query API: the suite reads roster's metrics the
 * way an operator's dashboards do. Locally a missing binary skips the suite
 * that needs it; with CI=true it is a failure.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { until } from "./chat-turns.ts";
import { isCI } from "./docker.ts";
import { freePort } from "./roster-root.ts";

export interface Sample {
  labels: Record<string, string>;
  value: number;
}

export interface Prometheus {
  /** An instant query's samples. */
  query(expression: string): Promise<Sample[]>;
  stop(): Promise<void>;
}

export function prometheusAvailable(): boolean {
  try {
    execFileSync("prometheus", ["--version"], { stdio: "ignore" });
    return true;
  } catch {
    if (isCI) throw new Error("no prometheus (apt-get install prometheus)");
    console.warn("skipping the metrics suite: no prometheus (apt-get install prometheus)");
    return false;
  }
}

/** `bearer`: the token each scrape sends (the key `[telemetry] metrics_credential` names). */
export async function startPrometheus(target: string, bearer?: string): Promise<Prometheus> {
  const dir = await mkdtemp(join(tmpdir(), "roster-prometheus-"));
  const port = await freePort();
  const config = join(dir, "prometheus.yml");
  await writeFile(
    config,
    `global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: roster\n${bearer ? `    authorization:\n      credentials: "${bearer}"\n` : ""}    static_configs:\n      - targets: ["${target}"]\n`,
  );
  const child: ChildProcess = spawn(
    "prometheus",
    [
      `--config.file=${config}`,
      `--storage.tsdb.path=${join(dir, "data")}`,
      `--web.listen-address=127.0.0.1:${port}`,
      "--log.level=warn",
    ],
    { stdio: ["ignore", "ignore", "pipe"] },
  );
  let log = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    log = `${log}${chunk.toString("utf8")}`.slice(-4000);
  });
  const base = `http://127.0.0.1:${port}`;
  await until(
    async () => (await fetch(`${base}/-/ready`).catch(() => undefined))?.ok,
    `prometheus to be ready (${log})`,
    30_000,
  );
  return {
    async query(expression) {
      const answer = await fetch(`${base}/api/v1/query?query=${encodeURIComponent(expression)}`);
      const body = (await answer.json()) as {
        status: string;
        error?: string;
        data?: { result: Array<{ metric: Record<string, string>; value: [number, string] }> };
      };
      if (body.status !== "success") throw new Error(`prometheus: ${body.error ?? answer.status}`);
      return (body.data?.result ?? []).map((one) => ({
        labels: one.metric,
        value: Number(one.value[1]),
      }));
    },
    async stop() {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      await exited;
      await rm(dir, { recursive: true, force: true });
    },
  };
}
