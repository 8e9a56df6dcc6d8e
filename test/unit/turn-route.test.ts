import { mkdtemp, rm } from "node:fs/promises";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { initRoots } from "../../runner/cli/does/init.ts";
import { type RosterPaths, rosterPaths } from "../../runner/ground/config/paths.ts";
import { handedTurn } from "../../runner/services/server/handed-turn.ts";
import { type RunSocket, serveRuns } from "../../runner/services/server/run-socket.ts";
import { runSocketPath } from "../../runner/services/server/state.ts";
import { SessionRouter } from "../../runner/work/sessions/router.ts";

/**
 * The server's `/turns` route, which a linked terminal's `roster talk` hands
 * its lines to: a body that isn't a turn is refused before anything runs, a
 * terminal that isn't linked is told to run its own session, and a client
 * that never finishes its request is dropped.
 */
let root: string;
let paths: RosterPaths;
let socket: RunSocket;

const post = (body: string, end = true) =>
  new Promise<{ status: number; text: string }>((resolve, reject) => {
    const req = request({ socketPath: runSocketPath(paths), path: "/turns", method: "POST" });
    req.on("response", (response) => {
      let text = "";
      response.setEncoding("utf8");
      response.on("data", (chunk: string) => {
        text += chunk;
      });
      response.on("end", () => resolve({ status: response.statusCode ?? 0, text }));
    });
    req.on("error", reject);
    req.write(body);
    if (end) req.end();
  });

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "roster-turns-"));
  paths = rosterPaths({ ROSTER_ROOT: root });
  await initRoots(paths);
  const router = new SessionRouter({
    paths,
    note: () => undefined,
    queueBound: 4,
    replyBy: () => "plain text",
    recordReplies: false,
  });
  socket = await serveRuns({
    paths,
    env: process.env,
    note: () => undefined,
    requestTimeoutMs: 300,
    turn: (turn, send) => handedTurn(paths, router, turn, send),
  });
});
afterAll(async () => {
  await socket?.close();
  await rm(root, { recursive: true, force: true });
});

describe("a terminal's turn handed to the server", () => {
  it("refuses a body that is not a turn, naming the field, before anything runs", async () => {
    const garbage = await post("{not json");
    expect(garbage.status).toBe(400);
    expect(garbage.text).toMatch(/bad turn request/);
    const room = await post(
      JSON.stringify({ worker: "elf", channel: "discord-dm-1", author: "ann", text: "hi" }),
    );
    expect(room.status).toBe(400);
    expect(room.text).toMatch(/bad turn request: \/channel/);
  });

  it("tells a terminal that isn't linked to run its own session", async () => {
    const answer = await post(
      JSON.stringify({ worker: "elf", channel: "term-ann-elf", author: "ann", text: "hi" }),
    );
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.text.trim())).toEqual({
      error: "term-ann-elf is not linked: roster talk runs its own session",
      exit: 1,
    });
    expect(socket.active()).toBe(0);
  });

  it("drops a client that never finishes its request", async () => {
    // Node answers a request that outlives requestTimeout with 408 and closes it
    const stalled = await post('{"worker":"elf"', false);
    expect(stalled.status).toBe(408);
  });
});
