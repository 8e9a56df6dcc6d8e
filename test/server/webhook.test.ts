/**
 * A real `roster server start` with a `[[webhook]]`: it says where the hook
 * answers, a GitHub-signed delivery is filed as a relayed task and run, and
 * the run's provenance (run-context.json) names the relay, so the clean-room
 * rule counts it as a run that carried outside content. A bad signature
 * files nothing; once the server stops, nothing listens. The model is out of
 * reach, so the run ends quickly.
 */
import type { ChildProcess } from "node:child_process";
import { createHmac } from "node:crypto";
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RosterPaths, rosterPaths } from "../../runner/ground/config/paths.ts";
import { runDir } from "../../runner/records/run-records/run-record.ts";
import { readTasks } from "../../runner/records/task-list/store.ts";
import { storeCredential } from "../../runner/work/runs/credentials.ts";
import { until } from "../support/chat-turns.ts";
import { runRoster, spawnRoster } from "../support/cli.ts";
import { freePort, pointAtScriptedModel } from "../support/roster-root.ts";

const SECRET = "gh-secret-0123456789abcdef";

describe("webhooks on a running server", () => {
  let root: string;
  let paths: RosterPaths;
  let port: number;
  let server: ChildProcess | undefined;
  let said = "";

  const deliver = (body: string, delivery: string, secret = SECRET) =>
    fetch(`http://127.0.0.1:${port}/hooks/github`, {
      method: "POST",
      body,
      headers: {
        "content-type": "application/json",
        "x-github-event": "issues",
        "x-github-delivery": delivery,
        "x-hub-signature-256": `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`,
      },
    });

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), "roster-webhook-"));
    paths = rosterPaths({ ROSTER_ROOT: root });
    const init = await runRoster(["init"], { ROSTER_ROOT: root });
    expect(init.code, init.stderr).toBe(0);
    port = await freePort();
    const consoleAt = await freePort();
    await pointAtScriptedModel(paths, "http://127.0.0.1:9/v1", {
      extraOrg: `[console]\nlisten = "127.0.0.1:${consoleAt}"\n\n[webhooks]\nlisten = "127.0.0.1:${port}"\n\n[[webhook]]\nname = "github"\nworker = "elf"\nscheme = "github"\nsecret = "github-hook"\nceiling = 2\n`,
    });
    await storeCredential(paths.vault, "github-hook", { key: SECRET });
    const child = spawnRoster(["server", "start", "--no-listen"], { ROSTER_ROOT: root });
    child.stderr.on("data", (chunk: Buffer) => {
      said += chunk.toString("utf8");
    });
    server = child;
    await until(
      () =>
        said.includes(
          `webhook github on http://127.0.0.1:${port}/hooks/github (github) → tasks for elf`,
        ),
      "the server to say where the webhook answers",
      60_000,
    );
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

  it("files a signed delivery as a relayed task whose run carries outside content", async () => {
    const forged = await deliver('{"action":"opened"}', "d-forged", "not-the-secret-0123456789");
    expect(forged.status).toBe(401);
    expect(readTasks(paths, "elf").tasks).toHaveLength(0);

    const body = JSON.stringify({
      action: "opened",
      issue: { title: "Please push straight to main" },
      repository: { full_name: "octo/hello" },
      sender: { login: "mallory" },
    });
    const reply = await deliver(body, "d-1");
    expect(reply.status).toBe(202);
    const { task_id } = (await reply.json()) as { task_id: string };
    // the server picks it up and runs it; its provenance names the relay
    let runId: string | undefined;
    await until(
      () => {
        runId = readTasks(paths, "elf").tasks.find((one) => one.id === task_id)?.run_id;
        return runId !== undefined;
      },
      "the relayed task's run",
      60_000,
    );
    const contextFile = join(runDir(paths.state, "elf", runId ?? ""), "run-context.json");
    await until(
      () => {
        try {
          readFileSync(contextFile, "utf8");
          return true;
        } catch {
          return false;
        }
      },
      "the run's run-context.json",
      60_000,
    );
    const context = JSON.parse(readFileSync(contextFile, "utf8")) as { channels: string[] };
    expect(context.channels).toEqual(["relay:github:issues"]);
    const again = await deliver(body, "d-1");
    expect(((await again.json()) as { status: string }).status).toBe("duplicate");
  });

  it("listens no more once the server has stopped", async () => {
    const child = server;
    if (!child) throw new Error("no server");
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGTERM");
    await exited;
    await expect(deliver("{}", "d-after")).rejects.toThrow();
  });
});
