import { type Context, Hono } from "hono";
import { html } from "hono/html";
import { streamSSE } from "hono/streaming";
import { loadConfig } from "../../ground/config/load.ts";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { errorMessage } from "../../ground/errors.ts";
import type { Session } from "../../work/sessions/session.ts";
import { approveGate, denyGate } from "../actions/desk.ts";
import { readGate } from "../actions/gates.ts";
import { type ConsoleEnv, WORKER_NAME } from "./env.ts";
import type { ConsoleFeed } from "./feed.ts";
import { CSS, type Html, live, page, plain, SCRIPT } from "./html.ts";
import type { ConsoleKey } from "./key.ts";
import { type ConsolePlace, hostGuard } from "./origin.ts";
import { approvalsPart } from "./pages/approvals.ts";
import { connectionsPart, credentialAges, expiryNotice } from "./pages/connections.ts";
import { type DoorFilter, doorFilters, doorPart } from "./pages/door.ts";
import { cardsPart, workerFacts } from "./pages/overview.ts";
import { doorPictures, runPictures, spendPictures } from "./pages/pictures.ts";
import { type RunFilter, runPage, runsFilters, runsPart } from "./pages/runs.ts";
import { channelPart, sessionsPart } from "./pages/sessions.ts";
import { sessionGuard } from "./session.ts";
import { ConsoleSummaries } from "./summaries.ts";
import { workRoutes } from "./work-routes.ts";

/**
 * The console's routes. Every page needs the session the login link opens:
 * its cookie and its token (session.ts; origin.ts says why both); a POST
 * also needs, when the browser sends one, an Origin of the console itself.
 * Responses carry a CSP that allows no inline script, no framing, and
 * nothing from elsewhere.
 */
export interface ConsoleDeps {
  paths: RosterPaths;
  key: ConsoleKey;
  /** Where the console listens (its port is known once it does): the Host and cookie it accepts. */
  place: () => ConsolePlace;
  feed: ConsoleFeed;
  sessions: () => Promise<Session[]>;
}

type Env = ConsoleEnv;

const NAME = WORKER_NAME;
const GATE_ID = /^g-[0-9a-f]{4,64}$/;

const CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join("; ");

export function consoleApp(deps: ConsoleDeps): Hono<Env> {
  const app = new Hono<Env>();
  guard(app, deps.key, deps.place);
  pageRoutes(app, deps);
  eventRoute(app, deps.feed);
  return app;
}

/**
 * Headers on every answer, the Host check before anything (origin.ts), the
 * login link, and the session's checks before any page (session.ts).
 */
function guard(app: Hono<Env>, key: ConsoleKey, place: () => ConsolePlace): void {
  app.use(async (c, next) => {
    await next();
    c.header("content-security-policy", CSP);
    c.header("x-content-type-options", "nosniff");
    // same-origin, not no-referrer: with no-referrer a form POST says `Origin: null`
    c.header("referrer-policy", "same-origin");
    c.header("cache-control", "no-store");
    c.header("x-frame-options", "DENY");
  });
  app.use(hostGuard(place));

  app.get("/console.css", (c) => c.body(CSS, 200, { "content-type": "text/css; charset=utf-8" }));
  app.get("/console.js", (c) =>
    c.body(SCRIPT, 200, { "content-type": "text/javascript; charset=utf-8" }),
  );

  sessionGuard(app, key, place);
}

/** The pages and the one form action (a gate's decision), in the order they are matched. */
function pageRoutes(app: Hono<Env>, deps: ConsoleDeps): void {
  const pages = pageKit(deps);
  overviewRoute(app, pages);
  approvalRoutes(app, pages);
  workRoutes(app, { paths: deps.paths, workers: pages.workers });
  runRoutes(app, pages);
  sessionRoutes(app, pages);
  doorRoute(app, pages);
  connectionsRoute(app, pages);
}

/** What the pages share: the workers in the config, a whole page or only its live part, the summaries. */
function pageKit(deps: ConsoleDeps) {
  const { paths, key, feed } = deps;
  const workers = () => [...loadConfig(paths.config).workers.keys()].sort();
  const show = (c: Context<Env>, title: string, current: string, body: Html) =>
    c.html(page({ title, current, csrf: c.get("token"), body }));
  const fragment = (c: Context<Env>) => c.req.query("fragment") === "1";
  const summaries = new ConsoleSummaries(paths);
  return { deps, paths, key, feed, workers, show, fragment, summaries };
}

type Pages = ReturnType<typeof pageKit>;

/** The landing page: a card per worker, then the pictures (each with its numbers). */
function overviewRoute(app: Hono<Env>, pages: Pages): void {
  const { paths, feed, show, fragment, summaries } = pages;
  app.get("/", async (c) => {
    feed.watchGates();
    feed.watchRuns();
    const config = loadConfig(paths.config);
    const now = new Date();
    const fresh = summaries.fresh(now);
    const door = fresh.door.window(24, now);
    const runs = fresh.runs.all();
    for (const run of fresh.runs.live()) feed.watchRun(run.worker, run.id);
    const cards = cardsPart(
      workerFacts({
        paths,
        config,
        runs,
        door,
        standing: (subject) => fresh.spend.standing(config.limits, subject, now.getTime()),
      }),
    );
    if (fragment(c)) return c.html(cards);
    const names = [...config.workers.keys()].sort();
    return show(
      c,
      "Overview",
      "/",
      html`${expiryNotice(credentialAges(paths, now.getTime()))}
${live("decision gate turn run", "/?fragment=1", cards)}
<section class="pictures">
${spendPictures(fresh.spend.days(30, now.getTime()), names)}
${doorPictures(door, 24)}
${runPictures(runs, 30, now.getTime())}
</section>`,
    );
  });
}

/** The gates waiting for a person, and a decision on one. */
function approvalRoutes(app: Hono<Env>, pages: Pages): void {
  const { paths, feed, show, fragment } = pages;
  app.get("/approvals", (c) => {
    feed.watchGates();
    const part = approvalsPart(paths, loadConfig(paths.config), c.get("token"));
    if (fragment(c)) return c.html(part);
    return show(c, "Approvals", "/approvals", live("gate", "/approvals?fragment=1", part));
  });

  app.post("/gates/:worker/:id/:verb", async (c) => {
    const { worker, id, verb } = c.req.param();
    if (!NAME.test(worker) || !GATE_ID.test(id) || (verb !== "approve" && verb !== "deny"))
      return c.html(plain("Not found", "No such gate."), 404);
    const gate = readGate(paths, worker, id);
    if (!gate) return c.html(plain("Not found", `No gate ${id} for ${worker}.`), 404);
    const form = c.get("form") ?? {};
    const note =
      typeof form.note === "string" && form.note.trim()
        ? form.note.trim().slice(0, 2000)
        : undefined;
    const decision = { by: "console", ...(note ? { note } : {}) };
    try {
      await (verb === "approve" ? approveGate : denyGate)(paths, gate, decision);
    } catch (error) {
      return c.html(plain("Not done", errorMessage(error)), 409);
    }
    return c.redirect(`/approvals#${id}`, 303);
  });
}

/** The runs, filtered, and one run's page. */
function runRoutes(app: Hono<Env>, pages: Pages): void {
  const { paths, feed, workers, show, fragment, summaries } = pages;
  app.get("/runs", (c) => {
    const filter: RunFilter = {
      worker: c.req.query("worker"),
      kind: c.req.query("kind"),
      state: c.req.query("state"),
    };
    const part = runsPart(paths, filter);
    if (fragment(c)) return c.html(part);
    return show(c, "Runs", "/runs", html`${runsFilters(filter, workers())}${part}`);
  });

  app.get("/runs/:worker/:id", (c) => {
    const { worker, id } = c.req.param();
    const part =
      NAME.test(worker) && /^[0-9A-Za-z-]{1,80}$/.test(id)
        ? runPage(paths, worker, id, (record) => summaries.decisionsOf(record))
        : undefined;
    if (!part) return c.html(plain("Not found", "No such run."), 404);
    if (fragment(c)) return c.html(part.body);
    // a run still going is watched, and its page follows it without a reload
    if (part.running) feed.watchRun(worker, id);
    const self = `/runs/${encodeURIComponent(worker)}/${encodeURIComponent(id)}?fragment=1`;
    return show(
      c,
      `Run ${id}`,
      "/runs",
      live("run activity decision", self, part.body, `${worker}/${id}`),
    );
  });
}

/** The sessions and the channels they talk on. */
function sessionRoutes(app: Hono<Env>, pages: Pages): void {
  const { deps, paths, show, fragment } = pages;
  app.get("/sessions", async (c) => {
    const part = sessionsPart(paths, await deps.sessions());
    if (fragment(c)) return c.html(part);
    return show(
      c,
      "Sessions and channels",
      "/sessions",
      live("turn", "/sessions?fragment=1", part),
    );
  });

  app.get("/channels/:id", (c) => {
    const id = c.req.param("id");
    const part = channelPart(paths, id);
    if (!part) return c.html(plain("Not found", "No such channel."), 404);
    if (fragment(c)) return c.html(part);
    return show(
      c,
      `Channel ${id}`,
      "/sessions",
      live("turn", `/channels/${encodeURIComponent(id)}?fragment=1`, part),
    );
  });
}

/** The door's log, filtered. */
function doorRoute(app: Hono<Env>, pages: Pages): void {
  const { paths, workers, show, fragment } = pages;
  app.get("/door", (c) => {
    const filter: DoorFilter = {
      worker: c.req.query("worker"),
      run: c.req.query("run"),
      verdict: c.req.query("verdict"),
      host: c.req.query("host"),
    };
    const part = doorPart(paths, filter);
    if (fragment(c)) return c.html(part);
    const query = new URLSearchParams({ ...cleaned(filter), fragment: "1" }).toString();
    return show(
      c,
      "Door",
      "/door",
      html`${doorFilters(filter, workers())}${live("decision", `/door?${query}`, part)}`,
    );
  });
}

/** Each connection and vault credential with its age, what expires soon marked. */
function connectionsRoute(app: Hono<Env>, pages: Pages): void {
  const { paths, show } = pages;
  app.get("/connections", (c) => {
    const now = Date.now();
    return show(c, "Connections", "/connections", connectionsPart(credentialAges(paths, now), now));
  });
}

/**
 * The live feed: each event is a nudge; pages fetch their own fresh part. A page
 * that stops reading never makes the server hold more than one event for it:
 * while a write waits, later events only mark their kind (and run) as missed,
 * and the missed ones go out (once each) when the write completes.
 */
function eventRoute(app: Hono<Env>, feed: ConsoleFeed): void {
  app.get("/events", (c) =>
    streamSSE(c, async (stream) => {
      let closed = false;
      let writing = false;
      // "kind\nabout" of events that came while a write waited: each goes once, later
      const missed = new Set<string>();
      const send = (kind: string, about = "") => {
        if (closed) return;
        if (writing) {
          missed.add(`${kind}\n${about}`);
          return;
        }
        writing = true;
        void stream
          .writeSSE({ event: kind, data: about })
          .catch(() => undefined)
          .finally(() => {
            writing = false;
            const next = missed.values().next();
            if (!next.done) {
              missed.delete(next.value);
              const [nextKind = "", nextAbout = ""] = next.value.split("\n");
              send(nextKind, nextAbout);
            }
          });
      };
      const unsubscribe = feed.subscribe(send);
      const ping = setInterval(() => send("ping"), 25_000);
      await new Promise<void>((resolve) => {
        stream.onAbort(() => {
          closed = true;
          resolve();
        });
      });
      clearInterval(ping);
      unsubscribe();
    }),
  );
}

function cleaned(filter: DoorFilter): Record<string, string> {
  return Object.fromEntries(
    Object.entries(filter).filter((entry): entry is [string, string] => Boolean(entry[1])),
  );
}
