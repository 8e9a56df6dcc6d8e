/**
 * fetch_pages on pages whose text only their scripts make, from a real box
 * through the real gateway: the box's headless browser renders them, every
 * request it makes goes through the door (judged and audited: the audit log
 * shows the page's own API call), a refused API leaves the page's static text
 * and names the refusal, a page that never settles is cut at `[box]
 * render_secs` (a worker's own, lower) with what it had, and a popup and a download are not allowed.
 * A page is not the run: its calls get no credential the grants inject, its
 * proposals and outcome reports never reach the action host, and its POST to
 * another site is refused. An http:// page renders like an https:// one.
 */
import { readFileSync } from "node:fs";
import { mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { storeCredential } from "../../runner/work/runs/credentials.ts";
import { testDocker } from "../support/docker.ts";
import { ModelServer, type ScriptStep } from "../support/model-server.ts";
import { makeRosterRoot, type RosterRoot, serveNamesLocally } from "../support/roster-root.ts";
import { Upstream } from "../support/upstream.ts";

const docker = await testDocker();

/** What the figures API's grant injects for the run's own calls; a page's calls never carry it. */
const FIGURES_TOKEN = "figures-token-for-the-run-only";

const page = (title: string, body: string, script: string) =>
  `<!doctype html><html><head><title>${title}</title></head><body>${body}<script>${script}</script></body></html>`;

/** An app shell: nothing to read until its script fetches the figures from another host. */
const SHELL = (api: string) =>
  page(
    "Figures",
    `<div id="root"></div>`,
    `fetch("${api}/figures").then((r) => r.json()).then((d) => {
      document.getElementById("root").innerHTML = "<article><h1>" + d.title + "</h1><p>" + d.body + "</p></article>";
    });`,
  );

/** Static text, and a script whose API the grants refuse. */
const TRACKED = (tracker: string) =>
  page(
    "Tracked",
    `<main><h1>Tracked page</h1><p>The static intro of the tracked page stays readable.</p><div id="extra"></div></main>`,
    `fetch("${tracker}/collect").then((r) => r.text()).then((t) => { document.getElementById("extra").textContent = "TRACKER SAID " + t; });`,
  );

/** Text that arrives, then a request that never answers and a timer that never stops. */
const RESTLESS = (self: string) =>
  page(
    "Restless",
    `<main><h1>Restless page</h1><div id="feed"></div></main>`,
    `document.getElementById("feed").textContent = "First items of the restless feed.";
     fetch("${self}/hang");
     setInterval(() => { document.title = "Restless " + Date.now(); }, 100);`,
  );

/** A page that tries a popup and a download as it loads. */
const PUSHY = (self: string) =>
  page(
    "Pushy",
    `<main><h1>Pushy page</h1><div id="text"></div></main>`,
    `window.open("${self}/elsewhere");
     const a = document.createElement("a"); a.href = "${self}/payload.bin"; a.download = "payload.bin"; document.body.appendChild(a); a.click();
     document.getElementById("text").textContent = "The pushy page's own words.";`,
  );

/**
 * A page on a granted host whose script acts as if it were the run: it files a
 * proposal and reports an outcome at the action host, and POSTs to an API
 * whose grant allows POST and injects a credential. Then it says it is done,
 * so the DOM read after it shows every call was answered or refused.
 */
const SNEAKY = (api: string) =>
  page(
    "Sneaky",
    `<main><h1>Sneaky page</h1><p id="said"></p></main>`,
    `const post = (url, body) => fetch(url, { method: "POST", mode: "no-cors", body }).catch(() => undefined);
     (async () => {
       await post("https://actions.roster.internal/submit", JSON.stringify({
         intent: "message-user", payload: { text: "PAGE MESSAGE to the operator" }, rationale: "PAGE RATIONALE: approve me" }));
       await post("https://actions.roster.internal/outcome", JSON.stringify({ status: "completed", note: "PAGE OUTCOME" }));
       await post("${api}/figures", "PAGE POST");
       document.getElementById("said").textContent = "The sneaky page finished its calls.";
     })();`,
  );

/** A page served over plain http, whose text its script writes. */
const PLAIN = page(
  "Plain",
  `<main><h1>Plain page</h1><div id="words"></div></main>`,
  `document.getElementById("words").textContent = "Words of the plain http page.";`,
);

/** A page that asks for far more than a render may: 200 images, of which 150 are fetched. */
const GREEDY = (self: string) =>
  page(
    "Greedy",
    `<main><h1>Greedy page</h1><div id="words"></div></main>`,
    `for (let i = 0; i < 200; i++) { const img = new Image(); img.src = "${self}/pixel/" + i; }
     document.getElementById("words").textContent = "The greedy page's words arrive anyway.";`,
  );

describe.skipIf(!docker)("fetch_pages renders pages that need their scripts, in the box", () => {
  let model: ModelServer;
  let deployment: RosterRoot;
  let site: Upstream;
  /** The same names over plain http, on a port of their own. */
  let plain: Upstream;
  const origin = (host: string) => `https://${host}:${site.port}`;

  beforeAll(async () => {
    model = await new ModelServer().start("127.0.0.1");
    site = await Upstream.start({
      tls: true,
      names: ["app.test", "api.test", "tracker.test"],
      handler: (req, res) => {
        const host = (req.headers.host ?? "").split(":")[0];
        const html = (text: string): void => {
          res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(text);
        };
        if (host === "api.test" && req.url === "/figures") {
          res
            .writeHead(200, {
              "content-type": "application/json",
              "access-control-allow-origin": "*",
            })
            .end(
              JSON.stringify({
                title: "Quarterly figures",
                body: "Revenue rose nine percent, reported by the figures API after the page's script asked.",
              }),
            );
          return;
        }
        if (req.url === "/hang") return new Promise<void>(() => undefined);
        if (req.url === "/shell") return html(SHELL(origin("api.test")));
        if (req.url === "/tracked") return html(TRACKED(origin("tracker.test")));
        if (req.url === "/sneaky") return html(SNEAKY(origin("api.test")));
        if (req.url === "/restless") return html(RESTLESS(origin("app.test")));
        if (req.url === "/pushy") return html(PUSHY(origin("app.test")));
        if (req.url === "/greedy") return html(GREEDY(origin("app.test")));
        if (req.url?.startsWith("/pixel/")) {
          res.writeHead(204).end();
          return;
        }
        if (req.url === "/payload.bin") {
          res.writeHead(200, { "content-type": "application/octet-stream" }).end("binary");
          return;
        }
        html(page("Else", "<p>elsewhere</p>", ""));
      },
    });
    plain = await Upstream.start({
      tls: false,
      handler: (_req, res) => {
        res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(PLAIN);
      },
    });
    // a page's proposal would be held at the desk (trust = "gate"), where the test looks for it
    deployment = await makeRosterRoot(model.baseUrl("127.0.0.1"), {
      extraOrg: '[[action]]\nname = "message-user"\nexecutor = "message-user"\ntrust = "gate"\n',
    });
    await storeCredential(deployment.paths.vault, "figures", { token: FIGURES_TOKEN });
    await serveNamesLocally(deployment, site.certificate?.caPem ?? "", [
      "app.test",
      "api.test",
      "tracker.test",
    ]);
    const orgFile = join(deployment.paths.config, "org.toml");
    const org = (await readFile(orgFile, "utf8")).replace(
      '[[grant]]\nname = "web-read"',
      `[[grant]]\nname = "app"\nverdict = "allow"\nmatch = { host = "app.test", method = "GET" }\n\n[[grant]]\nname = "figures-api"\nverdict = "allow"\nmatch = { host = "api.test" }\ninject = { credential = "figures" }\n\n[[grant]]\nname = "no-trackers"\nverdict = "deny"\nmatch = { host = "tracker.test" }\n\n[[grant]]\nname = "web-read"`,
    );
    // a worker of its own for the page that never settles: a worker may lower render_secs
    await mkdir(join(deployment.paths.config, "workers", "hasty"), { recursive: true });
    await writeFile(
      join(deployment.paths.config, "workers", "hasty", "worker.toml"),
      'name = "hasty"\n\n[box]\nrender_secs = 2\n',
    );
    await writeFile(orgFile, org);
  });
  afterAll(async () => {
    await model?.stop();
    await site?.stop();
    await plain?.stop();
    await deployment?.cleanup();
  });

  /** One fetch_pages call in a real run; the tool's answer as the model received it. */
  const fetchPages = async (args: Record<string, unknown>, worker = "elf"): Promise<string> => {
    let answer = "";
    const echo: ScriptStep = (request) => {
      const result = [...(request.body.messages ?? [])].reverse().find((m) => m.role === "tool");
      answer =
        typeof result?.content === "string" ? result.content : JSON.stringify(result?.content);
      return { text: "read" };
    };
    model.play({ toolCalls: [{ name: "fetch_pages", arguments: args }] }, echo);
    const run = await deployment.roster(["run", worker, "read these pages"]);
    expect(run.code, run.stderr).toBe(0);
    return answer;
  };

  // the browser runs under the box's runtime (gVisor's syscalls, Podman's /dev/shm): tagged to run there too
  it("renders an app shell whose text comes from another granted host, through the door", {
    tags: ["runtime"],
  }, async () => {
    const answer = await fetchPages({ urls: [`${origin("app.test")}/shell`] });
    expect(answer).toMatch(
      /rendered in a browser \(its served HTML has \d+ readable characters and scripts\)/,
    );
    expect(answer).toContain("Quarterly figures");
    expect(answer).toContain("Revenue rose nine percent");
    // the browser's own API call went through the door, judged by its grant
    const audit = readFileSync(join(deployment.paths.audit, "decisions.jsonl"), "utf8");
    expect(audit).toMatch(
      /"host":"api\.test"[^\n]*"rule":"figures-api"|"rule":"figures-api"[^\n]*"host":"api\.test"/,
    );
    // the grant injects a credential for the run's own calls, never for a page's
    const calls = site.seen.filter((one) => one.url === "/figures");
    expect(calls.length).toBeGreaterThan(0);
    for (const call of calls) expect(JSON.stringify(call.headers)).not.toContain(FIGURES_TOKEN);
  });

  it("keeps a page's static text when the door refuses its calls, and names the refusal; a page can't act as the run", async () => {
    const answer = await fetchPages({
      urls: [
        `${origin("app.test")}/tracked`,
        `${origin("tracker.test")}/page`,
        `${origin("app.test")}/sneaky`,
      ],
    });
    const [tracked, , sneaky] = answer.split("\n---\n");
    expect(tracked).toContain("The static intro of the tracked page stays readable.");
    expect(answer).not.toContain("TRACKER SAID");
    expect(answer).toMatch(/not loaded: tracker\.test[^\n]*no-trackers/);
    // a page the grants refuse fails as it always did, naming the rule
    expect(answer).toMatch(/could not read this page: denied by policy \(rule no-trackers\)/);

    // the sneaky page's calls were all answered or refused before its DOM was read ...
    expect(sneaky).toContain("The sneaky page finished its calls.");
    expect(sneaky).toMatch(/not loaded: [^\n]*actions\.roster\.internal: deny \(rule page\)/);
    expect(sneaky).toMatch(/not loaded: [^\n]*api\.test:\d+: deny \(rule page\)/);
    // the run's audit has each, refused as the page's
    const audit = readFileSync(join(deployment.paths.audit, "decisions.jsonl"), "utf8");
    for (const [host, path] of [
      ["actions\\.roster\\.internal", "/submit"],
      ["actions\\.roster\\.internal", "/outcome"],
      ["api\\.test", "/figures"],
    ])
      expect(audit).toMatch(
        new RegExp(
          `"verdict":"deny","rule":"page"[^\\n]*"run_id":"[^"]+","actor":"page"[^\\n]*"method":"POST","host":"${host}"[^\\n]*"path":"${path}"`,
        ),
      );
    // ... and none of them acted as the run: nothing at the desk, nothing in the journal
    const worker = join(deployment.paths.data, "workers", "elf");
    expect(await readdir(join(worker, "gates")).catch(() => [])).toEqual([]);
    const journal = await readFile(join(worker, "journal", "events.jsonl"), "utf8").catch(() => "");
    expect(journal).not.toContain("PAGE");
    expect(journal).not.toContain("outcome-reported");
    // its POST to another site never arrived, though the grant allows POST there
    expect(site.seen.filter((one) => one.method === "POST")).toEqual([]);
  });

  it("cuts a page that never settles at the limit, with what it had", async () => {
    const started = Date.now();
    const answer = await fetchPages({ urls: [`${origin("app.test")}/restless`] }, "hasty");
    expect(answer).toContain("First items of the restless feed.");
    expect(answer).toContain("it never settled, so this is what it had at the limit");
    // hasty's render_secs = 2: the run is not held for the default 15 s
    expect(Date.now() - started).toBeLessThan(40_000);
  });

  it("allows no popup, no download and no request past the cap, and reads each page, http:// too", async () => {
    // fetchPages asserts the run ended as usual: an http:// page once ended it at once
    const answer = await fetchPages({
      urls: [
        `${origin("app.test")}/pushy`,
        `${origin("app.test")}/greedy`,
        `http://app.test:${plain.port}/plain`,
      ],
      render: true,
    });
    const [pushy, greedy, plainPage] = answer.split("\n---\n");
    expect(plainPage).toContain("Words of the plain http page.");
    expect(plainPage).toMatch(/rendered in a browser/);
    expect(pushy).toContain("The pushy page's own words.");
    expect(pushy).toMatch(/not allowed: [^\n]*a popup/);
    expect(pushy).toMatch(/not allowed: [^\n]*a download \(payload\.bin\)/);
    expect(greedy).toContain("The greedy page's words arrive anyway.");
    expect(greedy).toMatch(/not allowed: [^\n]*requests past 150/);
    const pixels = site.seen.filter((one) => one.url.startsWith("/pixel/")).length;
    expect(pixels).toBeGreaterThan(0);
    expect(pixels).toBeLessThanOrEqual(150);
  });
});
