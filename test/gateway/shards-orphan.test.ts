import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { processAlive } from "../../runner/ground/files/process-alive.ts";
import { until } from "../support/chat-turns.ts";
import { ROSTER_BIN } from "../support/cli.ts";

/**
 * A gateway's shards never outlive it: killed at once (SIGKILL, no stop of
 * its own), its shards see their channel close and end, leaving no process
 * to hold the runs' door sockets.
 */
const root = mkdtempSync(join(tmpdir(), "roster-shard-orphan-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("a gateway's shards", () => {
  it("end when the gateway is killed", async () => {
    mkdirSync(join(root, "config"), { recursive: true });
    writeFileSync(join(root, "config/org.toml"), "[gateway]\nshards = 2\n");
    const gateway = spawn(ROSTER_BIN, ["gateway", "start", "--addr", "127.0.0.1:0"], {
      env: { ...process.env, ROSTER_ROOT: root },
      stdio: "ignore",
    });
    const pid = gateway.pid ?? 0;
    await until(() => existsSync(join(root, "state/gateway.json")), "the gateway to be up", 60_000);
    const shards = execFileSync("pgrep", ["-P", String(pid)], { encoding: "utf8" })
      .trim()
      .split("\n")
      .map(Number);
    expect(shards).toHaveLength(2);
    expect(shards.every(processAlive)).toBe(true);
    gateway.kill("SIGKILL");
    await until(() => !shards.some(processAlive), "the shards to end with their gateway", 10_000);
  });
});
