import { existsSync, readdirSync, readFileSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testBrowser, testOutput } from "../support/browser.ts";
import { until } from "../support/chat-turns.ts";
import { type ConsoleServer, startConsoleServer } from "../support/console-server.ts";
import { testDocker } from "../support/docker.ts";
import type { ModelServer } from "../support/model-server.ts";
import type { RosterRoot } from "../support/roster-root.ts";
import type { SmtpSink } from "../support/smtp.ts";

/**
 * The console's landing page in a real browser, behind a real server, over
 * real boxed runs of two workers: a card per worker says what it is doing,
 * how its last run ended, what is scheduled, what waits for approval, its
 * spend against its limits and what the door refused it. The pictures'
 * numbers equal `roster budget --json` and the audit log's own lines for the
 * same window. Screenshots at desktop and phone width go to
 * test-output/console/.
 */
const docker = await testDocker();
const browser: Browser | undefined = docker ? await testBrowser() : undefined;

// one cent a token: usd spend is visible next to tokens
const ORG = `
[[action]]
name = "email-send"
executor = "email"
trust = "gate"

[[budget.price]]
model = "scripted-*"
input = 10000
output = 10000

[[budget.limit]]
currency = "usd"
window = "day"
max = 5.0

[[budget.limit]]
currency = "tokens"
window = "hour"
max = 100000
`;

interface UsageLine {
  ts_ms: number;
  subject: string;
  currency: string;
  amount: number;
}
interface Decision {
  ts: string;
  subject?: string;
  status: number;
  request?: { host: string };
}

const lines = <T>(file: string): T[] =>
  readFileSync(file, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line) as T);

describe.skipIf(!docker || !browser)("the console's overview", () => {
  let running: ConsoleServer;
  let model: ModelServer;
  let smtp: SmtpSink;
  let deployment: RosterRoot;
  let base = "";
  let page: Page;
  const shots = testOutput("console");

  beforeAll(async () => {
    running = await startConsoleServer({
      modelKey: "USD-KEY",
      extraOrg: ORG,
      prepare: async (root) => {
        // elf has a cap of its own; gnome only the org's
        await writeFile(
          join(root.paths.config, "workers/elf/worker.toml"),
          'name = "elf"\n\n[[budget.limit]]\ncurrency = "tokens"\nwindow = "day"\nmax = 5000\n',
        );
        await mkdir(join(root.paths.config, "workers/gnome"), { recursive: true });
        await writeFile(join(root.paths.config, "workers/gnome/worker.toml"), 'name = "gnome"\n');
      },
    });
    ({ model, smtp, deployment, base } = running);
    page = await (browser as Browser).newPage({ viewport: { width: 1280, height: 900 } });
    await page.goto(running.login);
  }, 60_000);
  afterAll(async () => {
    await page?.close();
    await browser?.close();
    await running?.stop();
  });

  it("lands on a card per worker, after real runs, with what each one needs", async () => {
    expect(new URL(page.url()).pathname).toBe("/");
    // elf: a refused request at the door, then an email that waits for a person
    model.play(
      {
        toolCalls: [
          {
            name: "bash",
            arguments: {
              command: "curl -s -o /dev/null -w '%{http_code}' --max-time 5 http://refused.test/x",
            },
          },
        ],
      },
      { text: "that host is closed" },
    );
    const refused = await deployment.roster(["run", "elf", "try the host"], { timeoutMs: 120_000 });
    expect(refused.code, refused.stderr).toBe(0);
    model.play(
      {
        toolCalls: [
          {
            name: "send_email",
            arguments: {
              to: ["lead@example.test"],
              subject: "weekly numbers",
              body: "attached",
              rationale: "the lead asked",
            },
          },
        ],
      },
      { text: "filed" },
    );
    const gated = await deployment.roster(["run", "elf", "send the numbers"], {
      timeoutMs: 120_000,
    });
    expect(gated.code, gated.stderr).toBe(0);
    model.play({ text: "hello from gnome", usage: { prompt: 40, completion: 20 } });
    const gnome = await deployment.roster(["run", "gnome", "say hello"], { timeoutMs: 120_000 });
    expect(gnome.code, gnome.stderr).toBe(0);
    const added = await deployment.roster([
      "task",
      "add",
      "elf",
      "check the feed for news",
      "--every",
      "6h",
      "--json",
    ]);
    expect(added.code, added.stderr).toBe(0);

    await page.goto(`${base}/`);
    const elf = page.locator("article.card[data-worker=elf]");
    const gnomeCard = page.locator("article.card[data-worker=gnome]");
    await elf.waitFor();
    expect(await elf.locator("[data-state]").getAttribute("data-state")).toBe("idle");
    expect(await gnomeCard.locator("[data-state]").getAttribute("data-state")).toBe("idle");
    // the last run is the one that filed the gate: it links to the run's page
    const runs = JSON.parse(
      (await deployment.roster(["runs", "ls", "--worker", "elf", "--json"])).stdout,
    ) as Array<{ id: string }>;
    expect(await elf.locator("[data-last]").getAttribute("data-last")).toBe(runs[0]?.id);
    expect(await elf.locator("[data-waiting]").getAttribute("data-waiting")).toBe("1");
    expect(await gnomeCard.locator("[data-waiting]").getAttribute("data-waiting")).toBe("0");
    expect(await elf.textContent()).toContain("check the feed for news");
    // refusals in the last 24 hours, as the audit log has them
    const decisions = lines<Decision>(join(deployment.paths.audit, "decisions.jsonl")).filter(
      (d) => d.request && Date.parse(d.ts) > Date.now() - 24 * 3_600_000,
    );
    const elfRefused = decisions.filter((d) => d.subject === "org/elf" && d.status >= 400);
    expect(elfRefused.length).toBeGreaterThan(0);
    expect(await elf.locator("[data-refused]").getAttribute("data-refused")).toBe(
      String(elfRefused.length),
    );
    await page.screenshot({ path: join(shots, "overview.png"), fullPage: true });
  });

  it("shows each limit's spend as `roster budget --json` does", async () => {
    await page.goto(`${base}/`);
    for (const worker of ["elf", "gnome"]) {
      const budget = await deployment.roster(["budget", "--worker", worker, "--json"]);
      expect(budget.code, budget.stderr).toBe(0);
      const standing = budget.stdout
        .trim()
        .split("\n")
        .map(
          (line) =>
            JSON.parse(line) as { scope: string; currency: string; window: string; used: number },
        );
      const bars = page.locator(`article.card[data-worker=${worker}] .limit`);
      expect(await bars.count()).toBe(standing.length);
      for (const limit of standing) {
        const bar = page.locator(
          `article.card[data-worker=${worker}] .limit[data-scope="${limit.scope}"][data-currency="${limit.currency}"][data-window="${limit.window}"]`,
        );
        expect(Number(await bar.getAttribute("data-used"))).toBeCloseTo(limit.used, 9);
      }
      expect(standing.some((limit) => limit.used > 0)).toBe(true);
    }
  });

  it("draws spend, door traffic and runs with the audit log's and the records' numbers", async () => {
    await page.goto(`${base}/`);
    for (const chart of ["spend-tokens", "spend-usd", "door-hours", "door-hosts", "runs-outcomes"])
      expect(await page.locator(`svg[data-chart=${chart}] rect`).count()).toBeGreaterThan(0);
    // spend: today's sums per worker from audit/usage.jsonl
    const today = new Date().toISOString().slice(0, 10);
    const usage = lines<UsageLine>(join(deployment.paths.audit, "usage.jsonl")).filter(
      (line) => new Date(line.ts_ms).toISOString().slice(0, 10) === today,
    );
    await page.locator("figure#spend summary").click();
    for (const worker of ["elf", "gnome"]) {
      const mine = usage.filter((line) => line.subject === `org/${worker}`);
      const sum = (currency: string) =>
        mine.filter((line) => line.currency === currency).reduce((s, l) => s + l.amount, 0);
      const row = page.locator("table[data-numbers=spend] tr", { hasText: worker }).filter({
        hasText: today,
      });
      const cells = await row.locator("td").allTextContents();
      expect(cells.slice(0, 3)).toEqual([today, worker, String(sum("tokens"))]);
      expect(cells[3]).toBe(`$${sum("usd").toFixed(4)}`);
      expect(sum("tokens")).toBeGreaterThan(0);
    }
    // the door: per host, allowed and refused over the last 24 hours
    const hosts = new Map<string, [number, number]>();
    for (const d of lines<Decision>(join(deployment.paths.audit, "decisions.jsonl"))) {
      if (!d.request || Date.parse(d.ts) <= Date.now() - 24 * 3_600_000) continue;
      const seen = hosts.get(d.request.host) ?? [0, 0];
      seen[d.status >= 400 ? 1 : 0]++;
      hosts.set(d.request.host, seen);
    }
    await page.locator("figure#door summary").click();
    const shown = new Map<string, [number, number]>();
    for (const row of await page.locator("table[data-numbers=door] tbody tr").all()) {
      const [host, allowed, refusedCount] = await row.locator("td").allTextContents();
      shown.set(host ?? "", [Number(allowed), Number(refusedCount)]);
    }
    expect(shown).toEqual(hosts);
    expect(shown.get("refused.test")?.[1]).toBeGreaterThan(0);
    // runs: today's outcomes, as the records have them
    await page.locator("figure#runs summary").click();
    const todayRuns = page.locator("table[data-numbers=runs] tr", { hasText: today });
    const cells = await todayRuns.locator("td").allTextContents();
    expect(cells.slice(0, 5)).toEqual([today, "3", "0", "0", "0"]);
    await page.screenshot({ path: join(shots, "overview-numbers.png"), fullPage: true });
  });

  it("fits a phone's width", async () => {
    const phone = await (browser as Browser).newPage({
      viewport: { width: 390, height: 844 },
      deviceScaleFactor: 2,
      isMobile: true,
      hasTouch: true,
    });
    try {
      // a session of its own: the token lives in each browser's storage, not in the cookie
      await phone.goto(running.login);
      for (const path of ["/", "/approvals", "/tasks", "/runs", "/store", "/door", "/sessions"]) {
        await phone.goto(`${base}${path}`);
        // the page itself, not the login hint a phone without a session would get
        expect(await phone.locator("nav a[aria-current=page]").count(), path).toBe(1);
        const overflow = (await phone.evaluate(
          "document.documentElement.scrollWidth - window.innerWidth",
        )) as number;
        expect(overflow, `${path} scrolls sideways`).toBeLessThanOrEqual(0);
        const name = path === "/" ? "overview" : path.slice(1);
        await phone.screenshot({ path: join(shots, `${name}-phone.png`), fullPage: true });
      }
      // approving from a phone: the gate elf filed, tapped through at phone width
      await phone.goto(`${base}/approvals`);
      const card = phone.locator("article.gate[data-state=pending]");
      await card.locator("button[value=approve]").tap();
      await phone.locator("article.gate[data-state=executed]").waitFor({ timeout: 30_000 });
      expect(smtp.received).toHaveLength(1);
      expect(smtp.received[0]?.to).toEqual(["lead@example.test"]);
      await phone.screenshot({ path: join(shots, "approvals-phone-approved.png"), fullPage: true });
    } finally {
      await phone.close();
    }
  });

  it("follows a running run live: a tool call shows within a second, without a reload", async () => {
    const marker = `live-marker-${Date.now()}`;
    model.play(
      { toolCalls: [{ name: "bash", arguments: { command: "sleep 4" } }] },
      { toolCalls: [{ name: "bash", arguments: { command: `echo ${marker}; sleep 3` } }] },
      { text: "watched" },
    );
    const runsDir = join(deployment.paths.state, "runs", "elf");
    const before = new Set(readdirSync(runsDir));
    const finished = deployment.roster(["run", "elf", "work slowly"], { timeoutMs: 120_000 });
    const id = await until(
      () => readdirSync(runsDir).find((name) => !before.has(name)),
      "the new run's folder",
      30_000,
    );
    const events = join(runsDir, id, "events.jsonl");
    await until(() => existsSync(events), "the run's events", 30_000);
    await page.goto(`${base}/runs/elf/${id}`);
    await page.evaluate("window.stayed = true");
    expect(await page.locator("pre.conversation").textContent()).not.toContain(marker);
    // when the box's event reached the run's folder, and when the open page showed it
    const written = until(
      () => {
        const text = readFileSync(events, "utf8");
        return text.includes(marker) && text.includes("tool_execution_start") ? Date.now() : false;
      },
      "the tool call in events.jsonl",
      60_000,
    );
    const shown = page
      .locator("pre.conversation", { hasText: marker })
      .waitFor({ timeout: 60_000 })
      .then(() => Date.now());
    const [wroteAt, shownAt] = await Promise.all([written, shown]);
    expect(shownAt - wroteAt).toBeLessThan(1_000);
    expect(await page.evaluate("window.stayed")).toBe(true);
    await page.screenshot({ path: join(shots, "run-live.png"), fullPage: true });
    const run = await finished;
    expect(run.code, run.stderr).toBe(0);
    // the run's end reaches the page too
    await page.locator("td.done", { hasText: "done" }).waitFor({ timeout: 10_000 });
    expect(await page.evaluate("window.stayed")).toBe(true);
  });

  it("lists tasks and schedules, and cancels, requeues and retires as the CLI does, never without the CSRF token", async () => {
    const later = new Date(Date.now() + 86_400_000).toISOString().replace(/\.\d+Z$/, "Z");
    const first = JSON.parse(
      (
        await deployment.roster([
          "task",
          "add",
          "elf",
          "wait for tomorrow",
          "--at",
          later,
          "--json",
        ])
      ).stdout,
    ) as { id: string };
    const second = JSON.parse(
      (await deployment.roster(["task", "add", "elf", "then this", "--after", first.id, "--json"]))
        .stdout,
    ) as { id: string };
    const show = async (id: string) =>
      JSON.parse((await deployment.roster(["task", "show", id, "--json"])).stdout) as {
        state: string;
        note?: string;
      };
    await page.goto(`${base}/tasks`);
    const row = page.locator(`tr[data-task="${first.id}"]`);
    expect(await row.getAttribute("data-state")).toBe("pending");
    expect(await row.textContent()).toContain("not before");
    expect(await page.locator(`tr[data-task="${second.id}"]`).textContent()).toContain(
      `after ${first.id}`,
    );
    const template = page.locator("tr[data-template]", { hasText: "check the feed for news" });
    const templateId = (await template.getAttribute("data-template")) ?? "";
    const listed = (await deployment.roster(["task", "ls", "elf", "--json"])).stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as { id: string; next_at?: string });
    const next = listed.find((one) => one.id === templateId)?.next_at;
    expect(next).toBeTruthy();
    expect(await template.locator("[data-next]").getAttribute("data-next")).toBe(next);
    await page.screenshot({ path: join(shots, "tasks.png"), fullPage: true });

    // without the token, nothing changes
    const [cookie] = await page.context().cookies();
    const refused = await fetch(`${base}/tasks/elf/${first.id}/cancel`, {
      method: "POST",
      headers: { cookie: `${cookie?.name}=${cookie?.value}` },
      body: new URLSearchParams({}),
    });
    expect(refused.status).toBe(403);
    expect((await show(first.id)).state).toBe("pending");

    await row.locator("button[value=cancel]").click();
    await page.locator(`tr[data-task="${first.id}"][data-state=cancelled]`).waitFor();
    expect(await show(first.id)).toMatchObject({
      state: "cancelled",
      note: "cancelled by console",
    });
    await page.locator(`tr[data-task="${first.id}"] button[value=requeue]`).click();
    await page.locator(`tr[data-task="${first.id}"][data-state=pending]`).waitFor();
    expect(await show(first.id)).toMatchObject({
      state: "pending",
      note: "requeued by console (was cancelled)",
    });
    await template.locator("button[value=retire]").click();
    await page.locator("h1", { hasText: "Tasks" }).waitFor();
    expect(await page.locator(`tr[data-template="${templateId}"]`).count()).toBe(0);
    const after = (await deployment.roster(["task", "ls", "elf", "--json"])).stdout;
    expect(after).not.toContain(templateId);
    // a task the CLI refuses to change is refused here too, with the CLI's words
    const again = await fetch(`${base}/tasks/elf/${first.id}/requeue`, {
      method: "POST",
      headers: { cookie: `${cookie?.name}=${cookie?.value}` },
      body: new URLSearchParams({
        csrf: (await page.locator("meta[name=csrf-token]").getAttribute("content")) ?? "",
      }),
    });
    expect(again.status).toBe(409);
    expect(await again.text()).toContain("pending already");
  });

  it("shows the store's snapshots with what each run changed, and restores after asking, undoably", async () => {
    const store = join(deployment.paths.data, "workers/elf/store");
    const exec = async (command: string) => {
      const result = await deployment.roster(["box", "exec", "elf", "--", command], {
        timeoutMs: 120_000,
      });
      expect(result.code, result.stderr).toBe(0);
      return JSON.parse(result.stdout) as { run_id: string };
    };
    const first = await exec("echo one > ~/store/a.txt");
    const second = await exec("echo two > ~/store/a.txt && echo bee > ~/store/b.txt");
    const listed = JSON.parse(
      (await deployment.roster(["worker", "restore", "elf", "--list", "--json"])).stdout,
    ) as Array<{ name: string; run?: string }>;
    const before = listed.find((one) => one.run === first.run_id)?.name ?? "";
    const newest = listed.find((one) => one.run === second.run_id)?.name ?? "";
    expect(before && newest).toBeTruthy();

    await page.goto(`${base}/store`);
    const row = page.locator(`tr[data-snapshot="${newest}"]`);
    expect(await row.textContent()).toContain(second.run_id);
    await row.locator("summary").click();
    const changed = (await row.locator("pre.paths").textContent()) ?? "";
    expect(changed).toContain("~ a.txt");
    expect(changed).toContain("+ b.txt");
    await page.screenshot({ path: join(shots, "store.png"), fullPage: true });

    await page.locator(`tr[data-snapshot="${before}"] a`, { hasText: "Restore" }).click();
    expect(await page.locator("h1").textContent()).toBe("Restore?");
    expect(readFileSync(join(store, "a.txt"), "utf8")).toBe("two\n"); // asking changed nothing
    // without the token, nothing is restored
    const [cookie] = await page.context().cookies();
    const refused = await fetch(`${base}/store/elf/${before}/restore`, {
      method: "POST",
      headers: { cookie: `${cookie?.name}=${cookie?.value}` },
      body: new URLSearchParams({}),
    });
    expect(refused.status).toBe(403);
    expect(readFileSync(join(store, "a.txt"), "utf8")).toBe("two\n");

    await page.locator("button[value=restore]").click();
    const done = page.locator("[data-restored]");
    await done.waitFor();
    expect(await done.getAttribute("data-restored")).toBe(before);
    expect(readFileSync(join(store, "a.txt"), "utf8")).toBe("one\n");
    expect(existsSync(join(store, "b.txt"))).toBe(false);
    // the store had not changed since the second run's snapshot: that one holds it as it was
    const undo = (await page.locator("[data-undo]").getAttribute("data-undo")) ?? "";
    expect(undo).toBe(newest);
    await page.screenshot({ path: join(shots, "store-restored.png"), fullPage: true });

    await page.locator("button[value=undo]").click();
    await page.locator(`[data-restored="${undo}"]`).waitFor();
    expect(readFileSync(join(store, "a.txt"), "utf8")).toBe("two\n");
    expect(readFileSync(join(store, "b.txt"), "utf8")).toBe("bee\n");
  });
});
