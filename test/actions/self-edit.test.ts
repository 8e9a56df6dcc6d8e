import { existsSync, readFileSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readJournal } from "../../runner/records/journal/journal.ts";
import { approveGate } from "../../runner/services/actions/desk.ts";
import { showGate } from "../../runner/services/actions/desk-view.ts";
import { sha256 } from "../../runner/services/actions/executors/self-edit.ts";
import { findGate } from "../../runner/services/actions/gates.ts";
import { postAction } from "../support/action-host.ts";
import { type GatewayEnv, startGatewayEnv } from "../support/gateway-env.ts";

/** file_update of a worker's own worker.toml: one file, a base hash, and never a widening. */
let env: GatewayEnv;
let workerFile: string;
const ORIGINAL = 'name = "elf"\n';

const post = (path: string, token: string, body: unknown) => postAction(env, token, path, body);

const edit = (content: string, base = sha256(readFileSync(workerFile))) => ({
  intent: "file-update",
  payload: { path: "config/worker.toml", base_hash: base, content },
  rationale: "smaller boxes are enough for me",
});

beforeAll(async () => {
  env = await startGatewayEnv(
    `[box]\nmemory = "4g"\n\n[[action]]\nname = "file-update"\nexecutor = "self"\n\n[[action]]\nname = "identity-edit"\nexecutor = "identity"\ntrust = "auto"\n\n[[action]]\nname = "purpose-edit"\nexecutor = "purpose"\n`,
  );
  workerFile = join(env.paths.config, "workers/elf/worker.toml");
  await mkdir(join(workerFile, ".."), { recursive: true });
  await writeFile(workerFile, ORIGINAL);
  await writeFile(join(workerFile, "../identity.md"), "You are elf.\nYou write short answers.\n");
  await new Promise((resolve) => setTimeout(resolve, 600));
});
afterAll(async () => {
  await env?.cleanup();
});

describe("file_update", () => {
  it("an approved narrowing edit is written", async () => {
    const token = await env.token("elf");
    const next = `${ORIGINAL}\n[box]\nmemory = "1g"\n`;
    const reply = await post("/submit", token, edit(next));
    expect(reply.status).toBe(202);
    const done = await approveGate(env.paths, findGate(env.paths, String(reply.body.gate_id)), {
      by: "test",
    });
    expect(done).toMatchObject({
      state: "executed",
      result: { status: "ok", sha256: sha256(next) },
    });
    expect(readFileSync(workerFile, "utf8")).toBe(next);
    await writeFile(workerFile, ORIGINAL);
  });

  it("a widening edit is put back, and the gate fails with the loader's words", async () => {
    const token = await env.token("elf");
    const reply = await post("/submit", token, edit(`${ORIGINAL}\n[box]\nmemory = "64g"\n`));
    const failed = await approveGate(env.paths, findGate(env.paths, String(reply.body.gate_id)), {
      by: "test",
    });
    expect(failed.state).toBe("failed");
    expect(failed.error).toMatch(
      /put back.*box\.memory: "64g" is more than org\.toml allows \("4g"\)/,
    );
    expect(readFileSync(workerFile, "utf8")).toBe(ORIGINAL);
  });

  it("refuses a stale base at submit, and again at approval if the file changed meanwhile", async () => {
    const token = await env.token("elf");
    const stale = await post("/submit", token, edit('name = "elf"\n# x\n', "0".repeat(64)));
    expect(stale.status).toBe(409);
    expect(String(stale.body.error)).toMatch(/^payload\.base_hash: worker\.toml changed since/);

    const filed = await post("/submit", token, edit('name = "elf"\n# mine\n'));
    await writeFile(workerFile, 'name = "elf"\n# the operator\'s\n');
    const failed = await approveGate(env.paths, findGate(env.paths, String(filed.body.gate_id)), {
      by: "test",
    });
    expect(failed.state).toBe("failed");
    expect(readFileSync(workerFile, "utf8")).toBe('name = "elf"\n# the operator\'s\n');
    await writeFile(workerFile, ORIGINAL);
  });

  it.each([["../org.toml"], ["config/../../org.toml"], ["config/identity.md"]])(
    "refuses any other path (%s) naming the field",
    async (path) => {
      const token = await env.token("elf");
      const reply = await post("/submit", token, {
        intent: "file-update",
        payload: { path, base_hash: sha256(ORIGINAL), content: "x" },
      });
      expect(reply.status).toBe(400);
      expect(String(reply.body.error)).toMatch(/^bad envelope: payload\.path: /);
    },
  );
});

describe("identity and purpose edits", () => {
  it("an identity edit always gates, even under trust = auto, and the desk shows a diff", async () => {
    const token = await env.token("elf");
    const reply = await post("/submit", token, {
      intent: "identity-edit",
      payload: { identity: "You are elf.\nYou write long, careful answers.\n" },
    });
    expect(reply.status, JSON.stringify(reply.body)).toBe(202);
    expect(String(reply.body.message)).toContain("identity edits always gate");
    const gate = findGate(env.paths, String(reply.body.gate_id));
    const shown = showGate(env.paths, gate);
    expect(shown).toContain("-You write short answers.\n+You write long, careful answers.");
    await approveGate(env.paths, gate, { by: "test" });
    expect(readFileSync(join(workerFile, "../identity.md"), "utf8")).toContain("long, careful");
  });

  it("a purpose edit lands in the channel's purpose.md; a bad channel id is refused", async () => {
    const token = await env.token("elf");
    // a room nobody trusted yet: the edit waits for the desk
    const reply = await post("/submit", token, {
      intent: "purpose-edit",
      payload: { channel_id: "discord-1-ops", purpose: "Where the on-call talks to elf." },
    });
    const gate = findGate(env.paths, String(reply.body.gate_id));
    expect(showGate(env.paths, gate)).toContain("+Where the on-call talks to elf.");
    await approveGate(env.paths, gate, { by: "test" });
    expect(readFileSync(join(env.paths.data, "channels/discord-1-ops/purpose.md"), "utf8")).toBe(
      "Where the on-call talks to elf.",
    );
    const bad = await post("/submit", token, {
      intent: "purpose-edit",
      payload: { channel_id: "../../etc", purpose: "x" },
    });
    expect(bad.status).toBe(400);
    expect(String(bad.body.error)).toMatch(/payload\.channel_id/);
  });

  it("the desk shows a worker.toml edit as a diff", async () => {
    const token = await env.token("elf");
    const reply = await post("/submit", token, edit(`${ORIGINAL}\n[box]\ncpus = 1\n`));
    const shown = showGate(env.paths, findGate(env.paths, String(reply.body.gate_id)));
    expect(shown).toContain("+[box]\n+cpus = 1");
  });
});

describe("a task run's outcome", () => {
  it("is kept beside the run's record and journaled", async () => {
    const token = await env.token("elf", "run-task-1");
    const reply = await post("/outcome", token, {
      status: "completed",
      note: "all three files summarised",
    });
    expect(reply).toEqual({ status: 200, body: { status: "done" } });
    const file = join(env.paths.state, "runs/elf/run-task-1/outcome.json");
    expect(existsSync(file)).toBe(true);
    expect(JSON.parse(readFileSync(file, "utf8"))).toMatchObject({ status: "completed" });
    expect(readJournal(env.paths, "elf").at(-1)).toMatchObject({
      kind: "outcome-reported",
      summary: "completed",
      run_id: "run-task-1",
    });
    const bad = await post("/outcome", token, { status: "done-ish", note: "" });
    expect(bad.status).toBe(400);
    expect(String(bad.body.error)).toMatch(/^bad outcome: status/);
  });
});

describe("file_update trusted to run unasked", () => {
  let trusted: GatewayEnv;
  let file: string;
  beforeAll(async () => {
    trusted = await startGatewayEnv(
      `[[action]]\nname = "file-update"\nexecutor = "self"\ntrust = "auto"\n`,
    );
    file = join(trusted.paths.config, "workers/elf/worker.toml");
    await mkdir(join(file, ".."), { recursive: true });
    await writeFile(file, ORIGINAL);
  });
  afterAll(async () => {
    await trusted?.cleanup();
  });

  it("still waits for a human when it changes [toolchain], what the worker's image installs", async () => {
    const token = await trusted.token("elf");
    const submit = (content: string) =>
      postAction(trusted, token, "/submit", {
        intent: "file-update",
        payload: { path: "config/worker.toml", base_hash: sha256(readFileSync(file)), content },
        rationale: "tools",
      });
    const tooled = `${ORIGINAL}\n[toolchain]\nnpm = ["left-pad"]\n`;
    const held = await submit(tooled);
    expect(held.status, JSON.stringify(held.body)).toBe(202);
    expect(readFileSync(file, "utf8")).toBe(ORIGINAL);
    expect(readJournal(trusted.paths, "elf").at(-1)).toMatchObject({
      kind: "gate-filed",
      detail:
        "it changes [toolchain], what the worker's image installs, which always waits for a human",
    });
    // an edit that leaves [toolchain] alone runs at once, as its trust says
    const narrowed = `${ORIGINAL}\n[box]\ncpus = 1\n`;
    expect((await submit(narrowed)).status).toBe(200);
    expect(readFileSync(file, "utf8")).toBe(narrowed);
  });
});
