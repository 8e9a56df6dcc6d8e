import { mkdtemp, rm } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { initRoots } from "../../runner/cli/does/init.ts";
import { type RosterPaths, rosterPaths } from "../../runner/ground/config/paths.ts";
import { type RunningConsole, startConsole } from "../../runner/services/console/serve.ts";
import { testBrowser } from "../support/browser.ts";
import { listeningPort } from "../support/roster-root.ts";

/**
 * The console's session in a real browser, against another listener on the
 * same host (another local user's service the person happens to open): the
 * browser sends that listener the console's cookie (cookies ignore ports),
 * and the cookie is worth nothing there — replayed to the console it gets the
 * data-less shell and changes nothing, the other origin's script can't read
 * the session's token, and another session's token does not go with it.
 * Meanwhile the person's own pages work as before. A real console, no Docker.
 */
const browser: Browser | undefined = await testBrowser();

describe.skipIf(!browser)("the console session, bound to the console", () => {
  let root: string;
  let paths: RosterPaths;
  let web: RunningConsole;
  let other: Server;
  let otherPort = 0;
  /** What the browser sent the other listener. */
  const received: string[] = [];
  let mine: BrowserContext;
  let page: Page;

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), "roster-console-"));
    paths = rosterPaths({ ROSTER_ROOT: root });
    await initRoots(paths);
    web = await startConsole({
      paths,
      listen: { host: "127.0.0.1", port: 0 },
      workers: () => ["elf"],
      sessions: async () => [],
    });
    other = createServer((req, res) => {
      received.push(req.headers.cookie ?? "");
      res.writeHead(200, { "content-type": "text/html" }).end("<!doctype html><p>other</p>");
    });
    await new Promise<void>((resolve) => other.listen(0, "127.0.0.1", resolve));
    otherPort = listeningPort(other);
    mine = await (browser as Browser).newContext();
    page = await mine.newPage();
  });
  afterAll(async () => {
    await mine?.close();
    await browser?.close();
    await new Promise((resolve) => other?.close(resolve));
    await web?.close();
    if (root) await rm(root, { recursive: true, force: true });
  });

  const post = (cookie: string, token: string) =>
    fetch(`${web.url}/gates/elf/g-0000abcd/deny`, {
      method: "POST",
      headers: { cookie },
      body: new URLSearchParams({ csrf: token }),
    });

  it("logs in by the link and shows every page, the token out of the address", async () => {
    await page.goto(web.loginUrl);
    await page.locator("h1", { hasText: "Overview" }).waitFor();
    expect(page.url()).toBe(`${web.url}/`);
    await page.locator("nav a", { hasText: "Approvals" }).click();
    await page.locator("h1", { hasText: "Approvals" }).waitFor();
    expect(await page.locator("meta[name=csrf-token]").getAttribute("content")).toMatch(
      /^[A-Za-z0-9_-]{43}$/,
    );
  });

  it("leaves another listener on this host a cookie that opens nothing", async () => {
    await page.goto(`http://127.0.0.1:${otherPort}/`);
    const [cookie] = received.filter((line) => line.includes(`roster_console_${web.port}=`));
    // the browser did send it: cookies ignore ports
    expect(cookie).toBeDefined();
    // the other origin's script finds no token
    expect(await page.evaluate("localStorage.getItem('roster-console-session')")).toBeNull();
    const replayed = await fetch(`${web.url}/approvals`, { headers: { cookie: cookie ?? "" } });
    const body = await replayed.text();
    expect(body).toContain('<meta name="console-shell"');
    expect(body).not.toContain("Approvals");
    expect((await post(cookie ?? "", "")).status).toBe(403);
    // the person's console is still theirs
    await page.goto(`${web.url}/runs`);
    await page.locator("h1", { hasText: "Runs" }).waitFor();
  });

  it("refuses one session's cookie with another session's anti-forgery token", async () => {
    await page.goto(`${web.url}/approvals`);
    const token = (await page.locator("meta[name=csrf-token]").getAttribute("content")) ?? "";
    const [cookie] = await mine.cookies();
    const pair = `${cookie?.name}=${cookie?.value}`;
    const theirs = await (browser as Browser).newContext();
    try {
      const them = await theirs.newPage();
      await them.goto(web.loginUrl);
      await them.locator("h1", { hasText: "Overview" }).waitFor();
      const theirToken =
        (await them.locator("meta[name=csrf-token]").getAttribute("content")) ?? "";
      expect(theirToken).not.toBe(token);
      expect((await post(pair, theirToken)).status).toBe(403);
      // its own token goes through every guard, to a gate that does not exist
      expect((await post(pair, token)).status).toBe(404);
    } finally {
      await theirs.close();
    }
  });
});
