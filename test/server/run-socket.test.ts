import { mkdtemp, rm, stat } from "node:fs/promises";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { initRoots } from "../../runner/cli/does/init.ts";
import { type RosterPaths, rosterPaths } from "../../runner/ground/config/paths.ts";
import { type RunSocket, serveRuns } from "../../runner/services/server/run-socket.ts";
import { runSocketPath } from "../../runner/services/server/state.ts";
import { rawPeer } from "../support/hostile.ts";

/**
 * The server's run socket against peers that misbehave: garbage bytes, bad
 * requests, a body cut off mid-way, a client that connects and stalls. Each
 * is answered or dropped, and the socket keeps answering real requests. (A
 * request for a worker that does not exist is refused before any box, so
 * this needs no Docker.)
 */
let root: string;
let paths: RosterPaths;
let socket: RunSocket;
const notes: string[] = [];

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "roster-sock-"));
  paths = rosterPaths({ ROSTER_ROOT: root });
  await initRoots(paths);
  socket = await serveRuns({
    paths,
    env: { ROSTER_ROOT: root },
    note: (text) => notes.push(text),
    requestTimeoutMs: 1500,
  });
});
afterAll(async () => {
  await socket?.close();
  await rm(root, { recursive: true, force: true });
});

/** A whole request and its whole answer. */
function ask(body: string, path = "/runs"): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath: runSocketPath(paths), path, method: "POST" }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        text += chunk;
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on("error", reject);
    req.end(body);
  });
}

const raw = (bytes: string, endAfter = true) =>
  rawPeer({ path: runSocketPath(paths) }, bytes, endAfter);

const aRun = JSON.stringify({ worker: "nobody", prompt: "hi", ceiling_min: 1, json: false });

describe("the server's run socket", () => {
  it("is the server user's alone", async () => {
    expect((await stat(runSocketPath(paths))).mode & 0o777).toBe(0o600);
  });

  it("answers bad requests with the reason, and garbage by closing", async () => {
    expect(await ask("{not json")).toMatchObject({ status: 400 });
    const missing = await ask(JSON.stringify({ worker: "elf" }));
    expect(missing.status).toBe(400);
    expect(JSON.parse(missing.text)).toMatchObject({ exit: 2 });
    expect(JSON.parse(missing.text).error).toMatch(/^bad run request: /);
    expect((await ask(aRun, "/elsewhere")).status).toBe(404);
    // a route is a real route, never something inherited by an object's name
    expect((await ask(aRun, "/constructor")).status).toBe(404);
    const noCommand = await ask(
      JSON.stringify({ worker: "elf", command: "", timeout_secs: 5 }),
      "/exec",
    );
    expect(noCommand.status).toBe(400);
    expect(JSON.parse(noCommand.text).error).toMatch(/^bad exec request: \/command /);
    // over the size limit: refused before it is all read (on a raw socket, whose
    // own write error when the server hangs up is this test's to handle)
    const big = "x".repeat(3 * 1024 * 1024);
    const oversized = await raw(
      `POST /runs HTTP/1.1\r\nHost: x\r\nContent-Length: ${big.length}\r\n\r\n${big}`,
    );
    expect(oversized.reply).toMatch(/^HTTP\/1\.1 413 /);
    const garbage = await raw("\u0000\u0001 not http at all\r\n\r\n");
    expect(garbage.reply).toMatch(/^HTTP\/1\.1 400/);
  });

  it("drops a body cut off mid-way, and a client that connects and stalls", async () => {
    const cut = await raw(
      `POST /runs HTTP/1.1\r\nHost: x\r\nContent-Length: 500\r\n\r\n{"worker":`,
    );
    // refused or just closed; never a run started from half a request
    expect(cut.reply).toMatch(/^(HTTP\/1\.1 400 |$)/);
    expect(cut.reply).not.toContain("application/x-ndjson");
    const stalled = await raw("POST /runs HTTP/1.1\r\nHost: x\r\n", false);
    // dropped by the request timeout (1.5 s here), not held open
    expect(stalled.ms).toBeLessThan(10_000);
  });

  it("still runs requests after all that: a refusal streamed as a JSON line", async () => {
    const answer = await ask(aRun);
    expect(answer.status).toBe(200);
    const lines = answer.text
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as { error?: string; exit?: number });
    expect(lines.at(-1)).toMatchObject({ exit: 2 });
    expect(lines.at(-1)?.error).toContain('no worker named "nobody"');
  });
});
