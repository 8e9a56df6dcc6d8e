import { appendFileSync } from "node:fs";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { initRoots } from "../../runner/cli/does/init.ts";
import { type RosterPaths, rosterPaths } from "../../runner/ground/config/paths.ts";
import { type RunningConsole, startConsole } from "../../runner/services/console/serve.ts";
import { rawPeer } from "../support/hostile.ts";

/**
 * The console's server against peers that misbehave: garbage, a request
 * that never finishes, event streams opened by the dozen and dropped, and a
 * page that stops reading its stream while events pour in. Each is answered
 * or dropped, and the console keeps serving — and still delivers events to
 * a well-behaved page. No Docker, no browser: raw sockets.
 */
let root: string;
let paths: RosterPaths;
let web: RunningConsole;
let cookie = "";
let token = "";

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "roster-console-"));
  paths = rosterPaths({ ROSTER_ROOT: root });
  await initRoots(paths);
  web = await startConsole({
    paths,
    listen: { host: "127.0.0.1", port: 0 },
    workers: () => ["elf"],
    sessions: async () => [],
    requestTimeoutMs: 1500,
  });
  const login = await fetch(web.loginUrl, { redirect: "manual" });
  cookie = (login.headers.get("set-cookie") ?? "").split(";")[0] ?? "";
  token = /#session=([\w-]+)$/.exec(login.headers.get("location") ?? "")?.[1] ?? "";
});
afterAll(async () => {
  await web?.close();
  await rm(root, { recursive: true, force: true });
});

const raw = (bytes: string, endAfter = true) =>
  rawPeer({ port: web.port, host: "127.0.0.1" }, bytes, endAfter);

/** An event stream; resolves with its response once the headers are in. */
function events(): Promise<{ kinds: string[]; drop(): void; pause(): void }> {
  return new Promise((resolve, reject) => {
    const req = request(`${web.url}/events?session=${token}`, { headers: { cookie } }, (res) => {
      const kinds: string[] = [];
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        for (const match of chunk.matchAll(/^event: (\w+)$/gm)) kinds.push(match[1] ?? "");
      });
      res.on("error", () => undefined);
      resolve({ kinds, drop: () => req.destroy(), pause: () => res.pause() });
    });
    req.on("error", reject);
    req.end();
  });
}

const decide = () =>
  appendFileSync(join(paths.audit, "decisions.jsonl"), `${JSON.stringify({ ts: "x" })}\n`);

const until = async (check: () => boolean, what: string) => {
  for (let i = 0; i < 100 && !check(); i++) await new Promise((r) => setTimeout(r, 50));
  if (!check()) throw new Error(`timed out waiting for ${what}`);
};

describe("the console's server against hostile peers", () => {
  it("answers garbage with 400 and drops a request that never finishes", async () => {
    expect((await raw("\u0000\u0001 not http\r\n\r\n")).reply).toMatch(/^HTTP\/1\.1 400/);
    const stalled = await raw("GET /approvals HTTP/1.1\r\nHost: x\r\n", false);
    expect(stalled.ms).toBeLessThan(10_000); // the 1.5 s request timeout, not forever
  });

  it("refuses everything but the login page and its two files without the cookie", async () => {
    for (const path of ["/approvals", "/events", "/runs", "/door", "/nowhere"])
      expect((await fetch(`${web.url}${path}`)).status, path).toBe(401);
    expect((await fetch(`${web.url}/login?key=wrong`)).status).toBe(403);
    expect((await fetch(`${web.url}/console.js`)).status).toBe(200);
  });

  it("survives streams dropped by the dozen and a page that stops reading", async () => {
    for (let round = 0; round < 3; round++) {
      const streams = await Promise.all(Array.from({ length: 20 }, () => events()));
      for (const stream of streams) stream.drop();
    }
    const stuck = await events();
    stuck.pause();
    for (let i = 0; i < 2000; i++) decide();
    // a well-behaved page still hears about the next decision
    const reader = await events();
    decide();
    await until(() => reader.kinds.includes("decision"), "a decision event");
    reader.drop();
    stuck.drop();
    const page = await fetch(`${web.url}/approvals`, {
      headers: { cookie, "x-console-session": token },
    });
    expect(page.status).toBe(200);
  });

  it("tells pages about gates filed and channel turns", async () => {
    const reader = await events();
    await mkdir(join(paths.data, "workers/elf/gates"), { recursive: true });
    appendFileSync(join(paths.data, "workers/elf/gates/g-0000abcd.json"), "{}");
    await until(() => reader.kinds.includes("gate"), "a gate event");
    await mkdir(join(paths.data, "channels/term-ann-elf"), { recursive: true });
    await new Promise((r) => setTimeout(r, 100)); // the new channel's folder is picked up
    appendFileSync(join(paths.data, "channels/term-ann-elf/messages.jsonl"), "{}\n");
    await until(() => reader.kinds.includes("turn"), "a turn event");
    reader.drop();
  });
});
