/**
 * fetch_pages on pages whose text only their scripts make, from a real box
 * through the real gateway: the box's headless browser renders them, every
 * request it makes goes through the door (judged and audited: the audit log
 * shows the page's own API call), a refused API leaves the page's static text
 * and names the refusal, a page that never settles is cut at `[box]
 * render_secs` (a worker's own, lower) with what it had, and a popup and a download are not allowed.
 */
import { readFileSync } from "node:fs";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testDocker } from "../support/docker.ts";
import { ModelServer, type ScriptStep } from "../support/model-server.ts";
import { makeRosterRoot, type RosterRoot, serveNamesLocally } from "../support/roster-root.ts";
import { Upstream } from "../support/upstream.ts";

const docker = await testDocker();

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
    deployment = await makeRosterRoot(model.baseUrl("127.0.0.1"));
    await serveNamesLocally(deployment, site.certificate?.caPem ?? "", [
      "app.test",
      "api.test",
      "tracker.test",
    ]);
    const orgFile = join(deployment.paths.config, "org.toml");
    const org = (await readFile(orgFile, "utf8")).replace(
      '[[grant]]\nname = "web-read"',
      `[[grant]]\nname = "app"\nverdict = "allow"\nmatch = { host = "app.test", method = "GET" }\n\n[[grant]]\nname = "figures-api"\nverdict = "allow"\nmatch = { host = "api.test", method = "GET" }\n\n[[grant]]\nname = "no-trackers"\nverdict = "deny"\nmatch = { host = "tracker.test" }\n\n[[grant]]\nname = "web-read"`,
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
  });

  it("keeps a page's static text when the door refuses its API, and names the refusal", async () => {
    const answer = await fetchPages({
      urls: [`${origin("app.test")}/tracked`, `${origin("tracker.test")}/page`],
    });
    expect(answer).toContain("The static intro of the tracked page stays readable.");
    expect(answer).not.toContain("TRACKER SAID");
    expect(answer).toMatch(/not loaded: tracker\.test[^\n]*no-trackers/);
    // a page the grants refuse fails as it always did, naming the rule
    expect(answer).toMatch(/could not read this page: denied by policy \(rule no-trackers\)/);
  });

  it("cuts a page that never settles at the limit, with what it had", async () => {
    const started = Date.now();
    const answer = await fetchPages({ urls: [`${origin("app.test")}/restless`] }, "hasty");
    expect(answer).toContain("First items of the restless feed.");
    expect(answer).toContain("it never settled, so this is what it had at the limit");
    // hasty's render_secs = 2: the run is not held for the default 15 s
    expect(Date.now() - started).toBeLessThan(40_000);
  });

  it("allows no popup, no download and no request past the cap, and reads each page", async () => {
    const answer = await fetchPages({
      urls: [`${origin("app.test")}/pushy`, `${origin("app.test")}/greedy`],
      render: true,
    });
    const [pushy, greedy] = answer.split("\n---\n");
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
