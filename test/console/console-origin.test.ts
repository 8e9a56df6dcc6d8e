import { mkdtemp, rm } from "node:fs/promises";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { initRoots } from "../../runner/cli/does/init.ts";
import { type RosterPaths, rosterPaths } from "../../runner/ground/config/paths.ts";
import { type RunningConsole, startConsole } from "../../runner/services/console/serve.ts";

/**
 * The console's session is bound to its own origin: the cookie's name
 * carries the port, its value was made for that port, every request must
 * name the console's own address and port in its Host header, and nothing is
 * read or changed without the session's own token, which only the console's
 * origin holds. So another local listener that receives the cookie (browsers
 * send a host's cookies to all its ports) gets the data-less shell and no
 * more, no other console accepts it, another session's token does not go
 * with it, and a rebound name (DNS rebinding) is refused before any page.
 * Two real consoles of one install, on two ports.
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
  location: string;
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
            location: res.headers.location ?? "",
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

interface Login {
  /** The Set-Cookie line as sent. */
  line: string;
  /** Its name=value, as a browser sends it back. */
  cookie: string;
  /** The session's token, which the redirect hands the page in its fragment. */
  token: string;
}

async function login(web: RunningConsole, host = own(web)): Promise<Login> {
  const answer = await ask(web, loginPath(web), { host });
  expect(answer.status).toBe(303);
  const [line] = answer.setCookie;
  if (!line) throw new Error("no cookie set");
  const token = /^\/#session=([A-Za-z0-9_-]{43})$/.exec(answer.location)?.[1];
  if (!token) throw new Error(`no session token handed over (${answer.location})`);
  return { line, cookie: line.split(";")[0] ?? "", token };
}

/** What the page's script sends: the cookie and the session's token. */
const session = (login: Login, host: string) => ({
  host,
  cookie: login.cookie,
  "x-console-session": login.token,
});

describe("the console's session, bound to its origin", () => {
  it("sets an HttpOnly, SameSite=Strict cookie whose name carries the console's port", async () => {
    const mine = await login(one);
    expect(mine.line).toMatch(new RegExp(`^roster_console_${one.port}=[A-Za-z0-9_.-]+;`));
    expect(mine.line).toContain("HttpOnly");
    expect(mine.line).toContain("SameSite=Strict");
    expect(mine.line).toContain("Path=/");
    const page = await ask(one, "/approvals", session(mine, own(one)));
    expect(page.status).toBe(200);
    expect(page.body).toContain("<h1>Approvals</h1>");
    // localhost is the same console to a browser on this machine
    const local = await ask(one, "/approvals", session(mine, `localhost:${one.port}`));
    expect(local.status).toBe(200);
  });

  it("gives the cookie alone, as another local listener receives it, the shell and nothing more", async () => {
    const mine = await login(one);
    const replayed = await ask(one, "/approvals", { host: own(one), cookie: mine.cookie });
    expect(replayed.status).toBe(200);
    expect(replayed.body).toContain('<meta name="console-shell"');
    expect(replayed.body).not.toContain("Approvals");
    expect(replayed.body).not.toContain(mine.token);
    for (const path of ["/runs", "/door", "/tasks", "/?fragment=1", "/events"]) {
      const answer = await ask(one, path, { host: own(one), cookie: mine.cookie });
      expect(answer.body, path).toContain('<meta name="console-shell"');
    }
    // and it changes nothing: a post needs the token as well
    const post = await ask(
      one,
      "/gates/elf/g-0000abcd/deny",
      { host: own(one), cookie: mine.cookie },
      "POST",
    );
    expect(post.status).toBe(403);
  });

  it("refuses one session's cookie with another session's token", async () => {
    const mine = await login(one);
    const theirs = await login(one);
    expect(theirs.token).not.toBe(mine.token);
    const crossed = { host: own(one), cookie: mine.cookie, "x-console-session": theirs.token };
    const page = await ask(one, "/approvals", crossed);
    expect(page.status).toBe(403);
    expect(page.body).not.toContain("<h1>Approvals</h1>");
    expect((await ask(one, "/gates/elf/g-0000abcd/deny", crossed, "POST")).status).toBe(403);
    // its own token goes through every guard, to a gate that does not exist
    const honest = await ask(one, "/gates/elf/g-0000abcd/deny", session(mine, own(one)), "POST");
    expect(honest.status).toBe(404);
  });

  it("refuses a request whose Host is not the console's own address and port, cookie or not", async () => {
    const mine = await login(one);
    for (const host of [
      `rebound.example:${one.port}`,
      `127.0.0.1:${two.port}`,
      `127.0.0.2:${one.port}`,
      "127.0.0.1",
    ]) {
      const page = await ask(one, "/approvals", session(mine, host));
      expect(page.status, host).toBe(421);
      expect(page.body).toContain(`This console answers at 127.0.0.1:${one.port} only`);
    }
    // nor does a rebound name get logged in, or post a decision
    const rebound = { host: `rebound.example:${one.port}` };
    const loggedIn = await ask(one, loginPath(one), rebound);
    expect(loggedIn.status).toBe(421);
    expect(loggedIn.setCookie).toHaveLength(0);
    expect(
      (await ask(one, "/gates/elf/g-0000abcd/deny", session(mine, rebound.host), "POST")).status,
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
      const mine = await login(wide);
      for (const host of [`127.0.0.1:${wide.port}`, `localhost:${wide.port}`, `[::1]:${wide.port}`])
        expect((await ask(wide, "/approvals", session(mine, host))).status, host).toBe(200);
      const rebound = await ask(wide, "/approvals", session(mine, `rebound.example:${wide.port}`));
      expect(rebound.status).toBe(421);
    } finally {
      await wide.close();
    }
  });

  it("a cookie made for another port's console does not log in here, under either name", async () => {
    const theirs = await login(one);
    const value = theirs.cookie.slice(theirs.cookie.indexOf("=") + 1);
    expect((await ask(two, "/approvals", session(theirs, own(two)))).status).toBe(401);
    const renamed = { ...theirs, cookie: `roster_console_${two.port}=${value}` };
    expect((await ask(two, "/approvals", session(renamed, own(two)))).status).toBe(401);
    const mine = await login(two);
    expect(mine.cookie).not.toBe(renamed.cookie);
    expect((await ask(two, "/approvals", session(mine, own(two)))).status).toBe(200);
    // nor does a token made for the other port's session go with this one's cookie
    const crossed = { ...mine, token: theirs.token };
    expect((await ask(two, "/approvals", session(crossed, own(two)))).status).toBe(403);
  });
});
