import { mkdir, writeFile } from "node:fs/promises";
import { request } from "node:http";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_CEILING_MIN } from "../../runner/ground/config/ceiling.ts";
import { readTasks } from "../../runner/records/task-list/store.ts";
import { type RunSocket, serveRuns } from "../../runner/services/server/run-socket.ts";
import { runSocketPath } from "../../runner/services/server/state.ts";
import { submitAction } from "../support/action-host.ts";
import { runRoster } from "../support/cli.ts";
import { type GatewayEnv, startGatewayEnv } from "../support/gateway-env.ts";

/**
 * A run's ceiling has one bound, and a ceiling over it is refused in the same
 * words whichever way it comes: `roster run`, the server's run socket,
 * `roster task add`, a worker's file_task and set_tasks, org.toml's heartbeat
 * and `[box]` ceilings, `roster box exec --timeout`. Nothing is clamped, and
 * nothing starts. (Every refusal comes before a box, so no Docker is needed.)
 */
const OVER = MAX_CEILING_MIN + 1;
const REFUSAL = `a run's ceiling is at most ${MAX_CEILING_MIN} minutes (24 hours); ${OVER} was asked`;

let env: GatewayEnv;
let socket: RunSocket;
const cli = (args: string[]) => runRoster(args, { ROSTER_ROOT: env.root });

beforeAll(async () => {
  env = await startGatewayEnv(
    '[[action]]\nname = "file-task"\nexecutor = "task"\ntrust = "auto"\n\n[[action]]\nname = "set-tasks"\nexecutor = "task-list"\ntrust = "auto"\n',
  );
  await mkdir(join(env.paths.config, "workers/elf"), { recursive: true });
  await writeFile(join(env.paths.config, "workers/elf/worker.toml"), 'name = "elf"\n');
  socket = await serveRuns({ paths: env.paths, env: { ROSTER_ROOT: env.root }, note: () => {} });
});
afterAll(async () => {
  await socket?.close();
  await env?.cleanup();
});

/** One run handed to the server's socket, and every line it answered. */
function handOver(body: unknown): Promise<Record<string, unknown>[]> {
  return new Promise((resolve, reject) => {
    const req = request(
      { socketPath: runSocketPath(env.paths), path: "/runs", method: "POST" },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => {
          text += chunk;
        });
        res.on("end", () =>
          resolve(
            text
              .split("\n")
              .filter(Boolean)
              .map((line) => JSON.parse(line) as Record<string, unknown>),
          ),
        );
      },
    );
    req.on("error", reject);
    req.end(JSON.stringify(body));
  });
}

describe("the one ceiling bound", () => {
  it("roster run and the server's socket refuse it alike, exit 2, before anything starts", async () => {
    const local = await cli(["run", "--local", "--ceiling", String(OVER), "elf", "hi"]);
    expect(local.code).toBe(2);
    expect(local.stderr).toContain(REFUSAL);
    const handed = await handOver({ worker: "elf", prompt: "hi", ceiling_min: OVER, json: false });
    expect(handed.at(-1)).toEqual({ error: REFUSAL, exit: 2 });
    const exec = await cli([
      "box",
      "exec",
      "--local",
      "--timeout",
      String(OVER * 60),
      "elf",
      "--",
      "true",
    ]);
    expect(exec.code).toBe(2);
    expect(exec.stderr).toContain(REFUSAL);
    // at the bound itself a run is not refused for its ceiling (it goes on to what comes next)
    const atBound = await handOver({
      worker: "nobody",
      prompt: "hi",
      ceiling_min: MAX_CEILING_MIN,
      json: false,
    });
    expect(String(atBound.at(-1)?.error)).not.toContain("ceiling");
  });

  it("a task over it is refused from the CLI and from the worker, and none is filed", async () => {
    const added = await cli(["task", "add", "elf", "--ceiling", String(OVER), "Tidy"]);
    expect(added.code).toBe(2);
    expect(added.stderr).toContain(REFUSAL);
    const token = await env.token("elf", "run-c1");
    const filed = await submitAction(env, token, {
      intent: "file-task",
      payload: { prompt: "Tidy", ceiling_min: OVER },
    });
    expect(filed.status).toBe(409);
    expect(filed.body.error).toBe(`payload.ceiling_min: ${REFUSAL}`);
    const set = await submitAction(env, token, {
      intent: "set-tasks",
      payload: { base_version: 0, tasks: [{ prompt: "Tidy", ceiling_min: OVER }] },
    });
    expect(set.status).toBe(409);
    expect(set.body.error).toBe(`payload.tasks.0.ceiling_min: ${REFUSAL}`);
    expect(readTasks(env.paths, "elf").tasks).toEqual([]);
    // within the bound a worker may ask for more than the old four hours
    const long = await submitAction(env, token, {
      intent: "file-task",
      payload: { prompt: "Reindex", ceiling_min: 600 },
    });
    expect(long.status).toBe(200);
    expect(readTasks(env.paths, "elf").tasks.map((task) => task.ceiling_min)).toEqual([600]);
  });

  it("config over it is refused by file, line and field", async () => {
    const org = join(env.paths.config, "org.toml");
    await writeFile(
      org,
      `[box]\nsession_ceiling_min = ${OVER}\n\n[[heartbeat]]\nworkers = ["elf"]\nevery = "1h"\nceiling_min = ${OVER}\n`,
    );
    const checked = await cli(["validate"]);
    expect(checked.code).toBe(2);
    expect(checked.stdout).toMatch(
      new RegExp(`org\\.toml:2: box\\.session_ceiling_min: ${literally(REFUSAL)}`),
    );
    expect(checked.stdout).toMatch(
      new RegExp(`org\\.toml:7: heartbeat\\.0\\.ceiling_min: ${literally(REFUSAL)}`),
    );
  });
});

function literally(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
