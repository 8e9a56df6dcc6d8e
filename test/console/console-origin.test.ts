import { mkdtemp, rm } from "node:fs/promises";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { initRoots } from "../../runner/ground/config/init.ts";
import { type RosterPaths, rosterPaths } from "../../runner/ground/config/paths.ts";
import { type RunningConsole, startConsole } from "../../runner/services/console/serve.ts";

/**
 * The console's session is bound to its own origin: the cookie's name
 * carries the port, its value was made for that port, and every request must
 * name the console's own address and port in its Host header. So another
 * local listener that receives the cookie (browsers send a host's cookies to
 * all its ports) gets one no other console accepts, and a rebound name
 * (DNS rebinding) is refused before any page. Two real consoles of one
 * install, on two ports.
 */
let root: string;
let paths: RosterPaths;
let one: RunningConsole;
let two: RunningConsole;

const start = () =>
  startConsole({
    paths,
    listen: { host: "127.0.0.1", port: 0 },
    workers: () => ["elf"],
    sessions: async () => [],
  });

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "roster-console-"));
  paths = rosterPaths({ ROSTER_ROOT: root });
  await initRoots(paths);
  one = await start();
  two = await start();
});
afterAll(async () => {
  await one?.close();
  await two?.close();
  await rm(root, { recursive: true, force: true });
});

interface Answer {
  status: number;
  setCookie: string[];
  body: string;
}

/** One request with the Host header as given (a browser's, or a rebound name's). */
function ask(
  web: RunningConsole,
  path: string,
  headers: Record<string, string>,
  method = "GET",
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: "127.0.0.1", port: web.port, path, method, headers, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("end", () =>
          resolve({
            status: res.statusCode ?? 0,
            setCookie: res.headers["set-cookie"] ?? [],
            body: Buffer.concat(chunks).toString(),
          }),
        );
      },
    );
    req.on("error", reject);
    req.end();
  });
}

const own = (web: RunningConsole) => `127.0.0.1:${web.port}`;
const loginPath = (web: RunningConsole) =>
  new URL(web.loginUrl).pathname + new URL(web.loginUrl).search;

async function login(web: RunningConsole): Promise<string> {
  const answer = await ask(web, loginPath(web), { host: own(web) });
  expect(answer.status).toBe(303);
  const [cookie] = answer.setCookie;
  if (!cookie) throw new Error("no cookie set");
  return cookie;
}

describe("the console's session, bound to its origin", () => {
  it("sets an HttpOnly, SameSite=Strict cookie whose name carries the console's port", async () => {
    const cookie = await login(one);
    expect(cookie).toMatch(new RegExp(`^roster_console_${one.port}=[A-Za-z0-9_-]+;`));
    expect(cookie).toContain("HttpOnly");
    expect(cookie).toContain("SameSite=Strict");
    expect(cookie).toContain("Path=/");
    const pair = cookie.split(";")[0] ?? "";
    expect((await ask(one, "/approvals", { host: own(one), cookie: pair })).status).toBe(200);
    // localhost is the same console to a browser on this machine
    const local = await ask(one, "/approvals", { host: `localhost:${one.port}`, cookie: pair });
    expect(local.status).toBe(200);
  });

  it("refuses a request whose Host is not the console's own address and port, cookie or not", async () => {
    const pair = (await login(one)).split(";")[0] ?? "";
    for (const host of [
      `rebound.example:${one.port}`,
      `127.0.0.1:${two.port}`,
      `127.0.0.2:${one.port}`,
      "127.0.0.1",
    ]) {
      const page = await ask(one, "/approvals", { host, cookie: pair });
      expect(page.status, host).toBe(421);
      expect(page.body).toContain(`This console answers at 127.0.0.1:${one.port} only`);
    }
    // nor does a rebound name get logged in, or post a decision
    const rebound = { host: `rebound.example:${one.port}` };
    const loggedIn = await ask(one, loginPath(one), rebound);
    expect(loggedIn.status).toBe(421);
    expect(loggedIn.setCookie).toHaveLength(0);
    expect(
      (await ask(one, "/gates/elf/g-0000abcd/deny", { ...rebound, cookie: pair }, "POST")).status,
    ).toBe(421);
  });

  it("on every address (0.0.0.0) it answers to address literals and localhost, never to a name", async () => {
    const wide = await startConsole({
      paths,
      listen: { host: "0.0.0.0", port: 0 },
      workers: () => ["elf"],
      sessions: async () => [],
    });
    try {
      const cookie = (await login(wide)).split(";")[0] ?? "";
      for (const host of [`127.0.0.1:${wide.port}`, `localhost:${wide.port}`, `[::1]:${wide.port}`])
        expect((await ask(wide, "/approvals", { host, cookie })).status, host).toBe(200);
      const rebound = await ask(wide, "/approvals", {
        host: `rebound.example:${wide.port}`,
        cookie,
      });
      expect(rebound.status).toBe(421);
    } finally {
      await wide.close();
    }
  });

  it("a cookie made for another port's console does not log in here, under either name", async () => {
    const theirs = (await login(one)).split(";")[0] ?? "";
    const value = theirs.slice(theirs.indexOf("=") + 1);
    expect((await ask(two, "/approvals", { host: own(two), cookie: theirs })).status).toBe(401);
    const renamed = `roster_console_${two.port}=${value}`;
    expect((await ask(two, "/approvals", { host: own(two), cookie: renamed })).status).toBe(401);
    const mine = (await login(two)).split(";")[0] ?? "";
    expect(mine).not.toBe(renamed);
    expect((await ask(two, "/approvals", { host: own(two), cookie: mine })).status).toBe(200);
  });
});
