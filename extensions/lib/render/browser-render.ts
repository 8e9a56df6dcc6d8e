/**
 * Rendering a page whose text exists only after its scripts run: Debian's
 * headless Chromium in this box, driven by playwright-core over a pipe (no
 * debugging port a page could reach). The page's scripts are untrusted code,
 * and they run here, in the box, never on the host. Every request the browser
 * makes — the page, its scripts, its fetch/XHR calls, its images — goes
 * through the door via the DoorForwarder, judged and audited like any other;
 * loopback included (`<-loopback>`), so a page can't reach the box's own ports
 * around it. The only TLS the browser ever meets is the door's: it trusts the
 * box's CA, in an NSS database of its own.
 *
 * Bounds, per page: a wall-clock limit (a page that never settles is cut at it
 * with what it has), a cap on requests (the rest aborted) and on bytes (the
 * forwarder cuts every socket past it); no downloads, popups closed at once,
 * dialogs dismissed, permission prompts denied.
 */
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { DoorForwarder, doorFromEnv } from "./door-forwarder.ts";

export interface RenderLimits {
  timeoutMs: number;
  maxRequests: number;
  maxBytes: number;
}

export const RENDER_LIMITS: RenderLimits = {
  timeoutMs: renderMs(process.env.ROSTER_RENDER_SECS) ?? 15_000,
  maxRequests: 150,
  maxBytes: 20 * 1024 * 1024,
};

/**
 * How long Chromium may take to start, apart from a page's `render_secs`: that
 * bounds a page, and a short one (2 s) on a busy host would otherwise leave
 * every page unrendered before any was asked for.
 */
const BROWSER_START_MS = 15_000;

/** `[box] render_secs`, as the host hands it to the box. */
function renderMs(secs: string | undefined): number | undefined {
  const value = Number(secs);
  return secs && Number.isFinite(value) && value > 0 ? Math.round(value * 1000) : undefined;
}

export interface Rendered {
  /** The DOM after the scripts ran, serialised. */
  html: string;
  url: string;
  requests: number;
  bytes: number;
  /** The page did not settle within the limit: this is what it had. */
  cut: boolean;
  /** Requests the door refused, or that failed, one line each (host and reason). */
  refused: string[];
  /** What the page tried and was not let do (popups, downloads, requests past the cap). */
  blocked: string[];
}

const BROWSERS = ["/usr/bin/chromium-headless-shell", "/usr/bin/chromium"];

/** The browser this box has, if any. */
export function browserPath(): string | undefined {
  return BROWSERS.find((path) => existsSync(path));
}

export class Renderer {
  private constructor(
    private readonly browser: Browser,
    private readonly forwarder: DoorForwarder,
    private readonly home: string,
  ) {}

  /** A browser behind a forwarder to the door; undefined with why when this box can't render. */
  static async open(limits: RenderLimits): Promise<Renderer | string> {
    const executablePath = browserPath();
    if (!executablePath)
      return "this box has no headless browser (chromium-headless-shell), so the page was read as served";
    const door = doorFromEnv();
    if (!door) return "this box has no door (HTTPS_PROXY), so the page was read as served";
    const forwarder = new DoorForwarder(door, limits.maxBytes);
    const port = await forwarder.start();
    const { chromium } = await import("playwright-core");
    let home: string | undefined;
    try {
      home = await trustingHome();
      const browser = await chromium.launch({
        executablePath,
        env: browserEnv(home),
        // Chromium's own sandbox needs user namespaces or a setuid helper, and a box allows
        // neither (no-new-privileges, no capabilities, seccomp): docs/box.md says what stands instead
        chromiumSandbox: false,
        args: [
          `--proxy-server=http://127.0.0.1:${port}`,
          "--proxy-bypass-list=<-loopback>",
          "--disable-gpu",
          "--disable-dev-shm-usage",
          "--disable-background-networking",
          "--disable-component-update",
          "--disable-domain-reliability",
          "--disable-sync",
          "--no-first-run",
        ],
        timeout: Math.max(limits.timeoutMs, BROWSER_START_MS),
      });
      return new Renderer(browser, forwarder, home);
    } catch (error) {
      forwarder.close();
      if (home) await rm(home, { recursive: true, force: true });
      return `the headless browser did not start (${(error as Error).message.split("\n")[0]}), so the page was read as served`;
    }
  }

  async render(url: string, limits: RenderLimits): Promise<Rendered> {
    const context = await this.browser.newContext({
      acceptDownloads: false,
      serviceWorkers: "block",
      javaScriptEnabled: true,
    });
    const watch = watchContext(context, limits);
    this.forwarder.begin();
    const startBytes = this.forwarder.bytes;
    const deadline = Date.now() + limits.timeoutMs;
    let cut = false;
    try {
      const page = await context.newPage();
      await doorVerdicts(context, page, watch);
      page.on("dialog", (dialog) => void dialog.dismiss().catch(() => undefined));
      page.on("download", (download) => {
        note(watch.blocked, `a download (${download.suggestedFilename().slice(0, 80)})`);
        void download.cancel().catch(() => undefined);
      });
      try {
        await page.goto(url, { waitUntil: "load", timeout: limits.timeoutMs });
        // the text often arrives after `load`, from the page's own fetches
        await page.waitForLoadState("networkidle", { timeout: Math.max(1, deadline - Date.now()) });
      } catch {
        cut = true;
      }
      const html = await within(page, deadline + 2_000);
      if (html === undefined) cut = true;
      return {
        html: html ?? "",
        url: page.url(),
        requests: watch.requests,
        bytes: this.forwarder.bytes - startBytes,
        cut: cut || this.forwarder.cut,
        refused: watch.refused,
        blocked: watch.blocked,
      };
    } finally {
      await context.close().catch(() => undefined);
    }
  }

  async close(): Promise<void> {
    await this.browser.close().catch(() => undefined);
    this.forwarder.close();
    await rm(this.home, { recursive: true, force: true });
  }
}

/** Requests counted (past the cap, aborted), the door's refusals and failures noted, popups closed. */
function watchContext(context: BrowserContext, limits: RenderLimits) {
  const watch = {
    requests: 0,
    refused: [] as string[],
    blocked: [] as string[],
    /** URLs the door refused with its verdict. */
    explained: new Set<string>(),
  };
  let over = 0;
  void context.route("**/*", (route) => {
    watch.requests++;
    if (watch.requests <= limits.maxRequests) return route.continue().catch(() => undefined);
    if (over++ === 0) note(watch.blocked, `requests past ${limits.maxRequests}`);
    return route.abort("blockedbyclient").catch(() => undefined);
  });
  context.on("requestfailed", (request) => {
    const reason = request.failure()?.errorText ?? "failed";
    // a refusal the door explained is named by its verdict (doorVerdicts), not as a failure
    if (reason.includes("BLOCKED_BY_CLIENT") || watch.explained.has(request.url())) return;
    note(watch.refused, `${hostOf(request.url())}: ${reason}`);
  });
  context.on("page", (popup: Page) => {
    // the first page is ours; any other is a popup
    if (context.pages()[0] === popup) return;
    note(watch.blocked, `a popup (${hostOf(popup.url()) || "about:blank"})`);
    void popup.close().catch(() => undefined);
  });
  return watch;
}

/**
 * The door's refusals, read from the raw response headers (x-roster-verdict,
 * x-roster-rule): a page's cross-origin call the door refused reaches the
 * page as a CORS failure, whose response Playwright never shows.
 */
async function doorVerdicts(
  context: BrowserContext,
  page: Page,
  watch: { refused: string[]; explained: Set<string> },
): Promise<void> {
  const cdp = await context.newCDPSession(page);
  const urls = new Map<string, string>();
  cdp.on("Network.requestWillBeSent", (event) => {
    if (urls.size < 1000) urls.set(event.requestId, event.request.url);
  });
  cdp.on("Network.responseReceivedExtraInfo", (event) => {
    const headers = lowerKeys(event.headers);
    const verdict = headers["x-roster-verdict"];
    const url = urls.get(event.requestId);
    if (!verdict || !url) return;
    watch.explained.add(url);
    const rule = headers["x-roster-rule"];
    note(
      watch.refused,
      `${hostOf(url)}: ${verdict.slice(0, 40)}${rule ? ` (rule ${rule.slice(0, 80)})` : ""}`,
    );
  });
  await cdp.send("Network.enable");
}

/** At most 20 lines, each once: a page can't fill the answer with them. */
function note(lines: string[], line: string): void {
  if (lines.length < 20 && !lines.includes(line)) lines.push(line);
}

function lowerKeys(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(headers).map(([key, value]) => [key.toLowerCase(), value]),
  );
}

/** The DOM as it is now, unless the page's own scripts keep the browser from answering by `until`. */
async function within(page: Page, until: number): Promise<string | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), Math.max(1, until - Date.now()));
  });
  try {
    return await Promise.race([page.content().catch(() => undefined), late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The browser's environment: the box's, minus the proxy variables, which carry
 * the run's token. The browser's way out is the forwarder (--proxy-server),
 * which sends no token, so a page is only ever a page at the door.
 */
function browserEnv(home: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: home };
  for (const name of Object.keys(env)) if (/^(https?|all)_proxy$/i.test(name)) delete env[name];
  return env;
}

/**
 * A home for the browser whose NSS database trusts the box's CA, the door's
 * (Chromium on Linux reads trust from $HOME/.pki/nssdb, not from the files
 * the box's other tools read). Made fresh per browser, in /tmp.
 */
async function trustingHome(): Promise<string> {
  const home = await mkdtemp(join(tmpdir(), "roster-render-"));
  const db = `sql:${join(home, ".pki", "nssdb")}`;
  await mkdir(join(home, ".pki", "nssdb"), { recursive: true });
  const ca = process.env.NODE_EXTRA_CA_CERTS;
  if (!ca || !existsSync(ca)) throw new Error("the box's CA (NODE_EXTRA_CA_CERTS) is missing");
  await certutil(["-N", "-d", db, "--empty-password"]);
  await certutil(["-A", "-d", db, "-n", "roster-door", "-t", "C,,", "-i", ca]);
  return home;
}

function certutil(args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile("certutil", args, { timeout: 10_000 }, (error, _out, stderr) =>
      error ? reject(new Error(`certutil: ${String(stderr).trim() || error.message}`)) : resolve(),
    );
  });
}

function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return "";
  }
}
