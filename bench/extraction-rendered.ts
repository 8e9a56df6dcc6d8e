/**
 * fetch_pages on pages whose text only their scripts make, read as served
 * beside rendered in the box's browser: three app shells in
 * bench/rendered-pages/ (a docs site, a store's product page, a dashboard),
 * each an HTML shell from site.bench.test whose script fetches its content as
 * JSON from api.bench.test, both served over TLS on local names through the
 * real gateway to a real box. Per page, ROUNDS rounds (5 unless set) of two
 * `roster run`s against the scripted model, one calling fetch_pages with
 * `render: false` and one with `render: true`, the order alternating; then
 * one call with `render` unset, to see what the automatic decision does.
 * Word-F1 of the answer (its note lines and `## title / URL:` heading taken
 * off) against the page's hand-written main text (<name>.expected.txt). The
 * time is the tool's: from the arrival of the model request that got the tool
 * call to the arrival of the one carrying its result (the scripted model
 * answers at once, so this includes pi's own handling of the call, the same
 * for both paths; a render starts its browser for the call), beside its
 * floor: the same call with nothing to fetch (a URL it skips). One unmeasured
 * call each way first warms the disk cache. Needs Docker and the box image.
 *   npx tsx bench/extraction-rendered.ts      (ROUNDS=5)
 */
import { readFileSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { serveNamesLocally } from "../test/support/roster-root.ts";
import { Upstream } from "../test/support/upstream.ts";
import { ModelServer, makeRosterRoot, markdownWords, wordF1, words } from "./harness.ts";

const ROUNDS = Number(process.env.ROUNDS ?? 5);
const PAGES_DIR = fileURLToPath(new URL("./rendered-pages/", import.meta.url));
const SITE = "site.bench.test";
const API = "api.bench.test";

/** Each page: its name (its files in rendered-pages/) and the path it is served at. */
const PAGES = [
  { name: "docs", path: "/docs/retries", label: "docs site (Retries and backoff)" },
  { name: "store", path: "/products/fenwick-kettle", label: "store product page (a kettle)" },
  { name: "dashboard", path: "/overview", label: "dashboard (metric cards, invoices)" },
] as const;

const file = (name: string) => readFileSync(join(PAGES_DIR, name), "utf8");
const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;
const mean = (values: number[]) => values.reduce((sum, v) => sum + v, 0) / (values.length || 1);

/** The note lines fetch_pages puts above a page's text; not the page's words. */
const NOTE =
  /^\((rendered in a browser|not rendered:|rendered, but|the page did not finish|the page is larger than|the page has no readable text)[^\n]*\)$/;

/** The page's text as the answer gives it: no `## title` / `URL:` heading, no note lines. */
function pageText(answer: string): string {
  const lines = answer.split("\n");
  if (lines[0]?.startsWith("## ") && lines[1]?.startsWith("URL: ")) lines.splice(0, 2);
  return lines
    .filter((line) => !NOTE.test(line.trim()))
    .join("\n")
    .trim();
}

const model = await new ModelServer().start("127.0.0.1");
let apiOrigin = "";
const site = await Upstream.start({
  tls: true,
  names: [SITE, API],
  handler: (req, res) => {
    const host = (req.headers.host ?? "").split(":")[0];
    const path = new URL(req.url ?? "/", "https://x.invalid").pathname;
    if (host === API) {
      const page = PAGES.find((p) => path === `/v1/${p.name}`);
      if (!page) {
        res.writeHead(404, { "access-control-allow-origin": "*" }).end();
        return;
      }
      res
        .writeHead(200, {
          "content-type": "application/json",
          "access-control-allow-origin": "*",
          "cache-control": "no-store",
        })
        .end(file(`${page.name}.json`));
      return;
    }
    const script = PAGES.find((p) => path === `/static/${p.name}.js`);
    if (script) {
      res
        .writeHead(200, { "content-type": "text/javascript; charset=utf-8" })
        .end(file(`${script.name}.js`));
      return;
    }
    const page = PAGES.find((p) => path === p.path);
    if (page) {
      res
        .writeHead(200, { "content-type": "text/html; charset=utf-8" })
        .end(file(`${page.name}.html`).replaceAll("{{API}}", apiOrigin));
      return;
    }
    res.writeHead(404, { "content-type": "text/plain" }).end("not found");
  },
});
apiOrigin = `https://${API}:${site.port}`;
const pageUrl = (path: string) => `https://${SITE}:${site.port}${path}`;

const deployment = await makeRosterRoot(model.baseUrl("127.0.0.1"));

interface Call {
  answer: string;
  ms: number;
}

/** One `roster run` whose one tool call is fetch_pages on `url`; its answer and the tool's time. */
async function fetchPage(url: string, render: boolean | undefined): Promise<Call> {
  let calledAt = 0;
  let resultAt = 0;
  let answer = "";
  model.reset();
  model.play(
    (request) => {
      calledAt = request.arrivedAt;
      return {
        toolCalls: [
          {
            name: "fetch_pages",
            arguments: render === undefined ? { urls: [url] } : { urls: [url], render },
          },
        ],
      };
    },
    (request) => {
      resultAt = request.arrivedAt;
      const result = [...(request.body.messages ?? [])].reverse().find((m) => m.role === "tool");
      answer =
        typeof result?.content === "string" ? result.content : JSON.stringify(result?.content);
      return { text: "read" };
    },
  );
  const run = await deployment.roster(["run", "elf", "read this page"]);
  if (run.code !== 0) throw new Error(`roster run failed (${run.code}): ${run.stderr}`);
  if (!resultAt) throw new Error("the tool's result never reached the model");
  return { answer, ms: resultAt - calledAt };
}

try {
  await serveNamesLocally(deployment, site.certificate?.caPem ?? "", [SITE, API]);
  const orgFile = join(deployment.paths.config, "org.toml");
  const org = (await readFile(orgFile, "utf8")).replace(
    '[[grant]]\nname = "web-read"',
    `[[grant]]\nname = "bench-site"\nverdict = "allow"\nmatch = { host = "${SITE}", method = "GET" }\n\n[[grant]]\nname = "bench-api"\nverdict = "allow"\nmatch = { host = "${API}", method = "GET" }\n\n[[grant]]\nname = "web-read"`,
  );
  if (!org.includes('name = "bench-api"'))
    throw new Error("org.toml: no web-read grant to go before");
  await writeFile(orgFile, org);

  const first = PAGES[0];
  console.error("extraction-rendered: warming up");
  await fetchPage(pageUrl(first.path), true);
  await fetchPage(pageUrl(first.path), false);

  // the floor: the same tool call with nothing to fetch (a URL it skips), so no read at all
  const floor: number[] = [];
  for (let round = 0; round < ROUNDS; round++)
    floor.push((await fetchPage("ftp://site.bench.test/none", false)).ms);

  const rows: string[] = [];
  const autoRows: string[] = [];
  const staticF1s: number[] = [];
  const renderedF1s: number[] = [];
  const renderedNotes: string[] = [];
  for (const page of PAGES) {
    const expected = words(file(`${page.name}.expected.txt`));
    const url = pageUrl(page.path);
    const runs: Record<"static" | "rendered", { f1: number[]; ms: number[] }> = {
      static: { f1: [], ms: [] },
      rendered: { f1: [], ms: [] },
    };
    let note = "";
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? [false, true] : [true, false];
      for (const render of order) {
        const call = await fetchPage(url, render);
        const path = render ? runs.rendered : runs.static;
        path.f1.push(wordF1(markdownWords(pageText(call.answer)), expected).f1);
        path.ms.push(call.ms);
        if (render && !call.answer.includes("(rendered in a browser"))
          throw new Error(`${page.name}: render: true gave no rendered page:\n${call.answer}`);
        if (render) note ||= call.answer.match(/\(rendered in a browser[^\n]*\)/)?.[0] ?? "";
        console.error(
          `extraction-rendered: ${page.name} round ${round + 1} ${render ? "rendered" : "static"} ${call.ms.toFixed(0)} ms`,
        );
      }
    }
    const staticF1 = mean(runs.static.f1);
    const renderedF1 = mean(runs.rendered.f1);
    staticF1s.push(staticF1);
    renderedF1s.push(renderedF1);
    renderedNotes.push(`${page.name}: ${note}`);
    const staticMs = median(runs.static.ms);
    const renderedMs = median(runs.rendered.ms);
    rows.push(
      `| ${page.label} | ${staticF1.toFixed(3)} | ${renderedF1.toFixed(3)} | ${staticMs.toFixed(0)} | ${renderedMs.toFixed(0)} | ${(renderedMs / staticMs).toFixed(1)}x |`,
    );

    const auto = await fetchPage(url, undefined);
    const reason = auto.answer.match(/\(rendered in a browser \((.*?)\):/)?.[1];
    autoRows.push(
      `| ${page.label} | ${reason ? "yes" : "no"} | ${reason ?? "-"} | ${wordF1(markdownWords(pageText(auto.answer)), expected).f1.toFixed(3)} |`,
    );
  }

  console.log(
    `fetch_pages on three app shells from a real box, ${ROUNDS} rounds a page; F1 is word-F1 against the hand-written main text (mean of the rounds), times are the tool's (median)\n`,
  );
  console.log(
    "| page | static F1 | rendered F1 | static ms | rendered ms | rendered / static time |",
  );
  console.log("| --- | --- | --- | --- | --- | --- |");
  for (const row of rows) console.log(row);
  console.log(
    `\nfloor: the same fetch_pages call with nothing to fetch (an ftp:// URL it skips) takes ${median(floor).toFixed(0)} ms (median of ${ROUNDS})`,
  );
  console.log(
    `mean F1: static ${mean(staticF1s).toFixed(3)}, rendered ${mean(renderedF1s).toFixed(3)}`,
  );
  console.log("\nThe rendered calls' notes (first round):\n");
  for (const note of renderedNotes) console.log(`- ${note}`);
  console.log("\n`render` unset (one call a page): did the automatic decision render it?\n");
  console.log("| page | rendered | why | F1 |");
  console.log("| --- | --- | --- | --- |");
  for (const row of autoRows) console.log(row);
} finally {
  await model.stop();
  await site.stop();
  await deployment.cleanup();
}
