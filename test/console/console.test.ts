import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testBrowser, testOutput } from "../support/browser.ts";
import { type ConsoleServer, startConsoleServer } from "../support/console-server.ts";
import { testDocker } from "../support/docker.ts";
import { reachFromBox } from "../support/host-port-reach.ts";
import type { ModelServer } from "../support/model-server.ts";
import type { RosterRoot } from "../support/roster-root.ts";
import type { SmtpSink } from "../support/smtp.ts";

/**
 * The web console in a real browser, served by a real `roster server start`:
 * log in through the printed link, watch a gate filed by a real box appear
 * without a reload, approve it (the SMTP server receives exactly one email),
 * see markup a worker wrote shown as text, and find the console closed to
 * requests without the cookie or the CSRF token, and to boxes altogether; a
 * box's request through the gateway shows up on the door page without a reload.
 */
const docker = await testDocker();
const browser: Browser | undefined = docker ? await testBrowser() : undefined;

const GRANTS = `
[[action]]
name = "email-send"
executor = "email"
trust = "gate"
`;

describe.skipIf(!docker || !browser)("the web console", () => {
  let running: ConsoleServer;
  let model: ModelServer;
  let smtp: SmtpSink;
  let deployment: RosterRoot;
  let base = "";
  let login = "";
  let page: Page;
  const shots = testOutput("console");

  beforeAll(async () => {
    running = await startConsoleServer({ extraOrg: GRANTS });
    ({ model, smtp, deployment, base, login } = running);
    page = await (browser as Browser).newPage();
  }, 60_000);
  afterAll(async () => {
    await page?.close();
    await browser?.close();
    await running?.stop();
  });

  it("listens on loopback and asks for the login link first", async () => {
    expect(base).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    await page.goto(`${base}/approvals`);
    expect(await page.locator("h1").textContent()).toBe("Log in first");
    await page.goto(login);
    expect(new URL(page.url()).pathname).toBe("/");
    expect(page.url()).not.toContain("key="); // the key leaves the address bar
    const [cookie] = await page.context().cookies();
    expect(cookie).toMatchObject({
      name: `roster_console_${new URL(base).port}`,
      httpOnly: true,
      sameSite: "Strict",
    });
  });

  it("shows a gate a real box files without a reload, its markup as text, and approving sends once", async () => {
    await page.goto(`${base}/approvals`);
    await page.screenshot({ path: join(shots, "approvals-empty.png"), fullPage: true });
    // (expressions as strings: the page's globals are not this file's)
    const scripts = await page.evaluate("window.stayed = true, document.scripts.length");
    model.play(
      {
        toolCalls: [
          {
            name: "send_email",
            arguments: {
              to: ["lead@example.test"],
              subject: "Numbers <script>window.pwned=1</script>",
              body: "They are in. <img src=x onerror=alert(1)>",
              rationale: "the lead asked",
            },
          },
        ],
      },
      { text: "filed" },
    );
    const run = await deployment.roster(["run", "elf", "send the numbers"], {
      timeoutMs: 120_000,
    });
    expect(run.code, run.stderr).toBe(0);
    const card = page.locator("article.gate[data-state=pending]");
    await card.waitFor({ timeout: 10_000 });
    // the same page, never reloaded: the event stream brought it
    expect(await page.evaluate("window.stayed")).toBe(true);
    const payload = (await card.locator("pre.payload").textContent()) ?? "";
    expect(payload).toContain("Subject: Numbers <script>window.pwned=1</script>");
    expect(payload).toContain("<img src=x onerror=alert(1)>");
    expect(await page.evaluate("document.scripts.length")).toBe(scripts);
    expect(await page.evaluate("window.pwned")).toBe(undefined);
    expect(await page.locator("article.gate img").count()).toBe(0);
    await page.screenshot({ path: join(shots, "approvals-pending.png"), fullPage: true });

    await card.locator("input[name=note]").first().fill("fine, send it");
    await card.locator("button[value=approve]").click();
    const executed = page.locator("article.gate[data-state=executed]");
    await executed.waitFor({ timeout: 30_000 });
    expect(await executed.textContent()).toContain("by console: fine, send it");
    expect(smtp.received).toHaveLength(1);
    expect(smtp.received[0]?.to).toEqual(["lead@example.test"]);
    await page.screenshot({ path: join(shots, "approvals-executed.png"), fullPage: true });
  });

  it("refuses state changes without the cookie or without the CSRF token", async () => {
    const [cookie] = await page.context().cookies();
    const sessionCookie = `${cookie?.name}=${cookie?.value}`;
    const target = `${base}/gates/elf/g-00000000/approve`;
    const noCookie = await fetch(target, { method: "POST", body: new URLSearchParams({}) });
    expect(noCookie.status).toBe(401);
    const noToken = await fetch(target, {
      method: "POST",
      headers: { cookie: sessionCookie },
      body: new URLSearchParams({ note: "x" }),
    });
    expect(noToken.status).toBe(403);
    const token = await page.locator("meta[name=csrf-token]").getAttribute("content");
    const foreign = await fetch(target, {
      method: "POST",
      headers: { cookie: sessionCookie, origin: "http://evil.test" },
      body: new URLSearchParams({ csrf: token ?? "" }),
    });
    expect(foreign.status).toBe(403);
    const honest = await fetch(target, {
      method: "POST",
      headers: { cookie: sessionCookie },
      body: new URLSearchParams({ csrf: token ?? "" }),
    });
    expect(honest.status).toBe(404); // through every guard, to a gate that does not exist
    const headers = (await fetch(`${base}/runs`, { headers: { cookie: sessionCookie } })).headers;
    expect(headers.get("content-security-policy")).toContain("script-src 'self'");
    expect(headers.get("content-security-policy")).not.toContain("unsafe-inline");
    expect(smtp.received).toHaveLength(1); // nothing above sent anything
  });

  it("shows runs, a run in full, sessions and the door", async () => {
    await page.goto(`${base}/runs`);
    const first = page.locator("table a[href^='/runs/elf/']").first();
    await first.waitFor();
    await page.screenshot({ path: join(shots, "runs.png"), fullPage: true });
    await first.click();
    expect(await page.locator("pre.conversation").textContent()).toContain("tool send_email");
    expect(await page.locator("h2", { hasText: "Door" }).count()).toBe(1);
    await page.screenshot({ path: join(shots, "run.png"), fullPage: true });
    await page.goto(`${base}/sessions`);
    await page.screenshot({ path: join(shots, "sessions.png"), fullPage: true });
    await page.goto(`${base}/door`);
    expect(await page.locator("table.decisions tbody tr").count()).toBeGreaterThan(0);
    await page.screenshot({ path: join(shots, "door.png"), fullPage: true });
  });

  it("shows a request a box makes through the gateway on the door page, live", async () => {
    await page.goto(`${base}/door`);
    await page.evaluate("window.stayed = true");
    const marker = `/seen-live-${Date.now()}`;
    const exec = await deployment.roster(
      [
        "box",
        "exec",
        "elf",
        "--",
        `curl -s -o /dev/null -w '%{http_code}' --max-time 5 http://live-door.test${marker}`,
      ],
      { timeoutMs: 60_000 },
    );
    expect((JSON.parse(exec.stdout) as { stdout: string }).stdout).toBe("403");
    const row = page.locator("table.decisions tbody tr", { hasText: `live-door.test${marker}` });
    await row.waitFor({ timeout: 10_000 });
    // the same page, never reloaded: the event stream brought the row
    expect(await page.evaluate("window.stayed")).toBe(true);
    expect(await row.locator("td").nth(1).textContent()).toBe("elf");
    expect(await row.locator("td").nth(4).textContent()).toBe("403");
    await page.screenshot({ path: join(shots, "door-live.png"), fullPage: true });
  });

  it("is out of every box's reach: through the gateway and around it", async () => {
    const { answers, closed } = await reachFromBox(
      deployment,
      Number(new URL(base).port),
      "/approvals",
    );
    expect(answers[0]).toBe("403");
    expect(answers[1]).toBe("403");
    expect(answers[2]).toMatch(/^000 exit=(7|28)$/); // no route: a box has no network
    expect(closed).toBe(2);
  });
});
