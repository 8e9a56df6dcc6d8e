import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testDocker } from "../support/docker.ts";
import { startDuckDuckGo } from "../support/duckduckgo-stand-in.ts";
import { ModelServer } from "../support/model-server.ts";
import { minimalPdf } from "../support/pdf.ts";
import { makeRosterRoot, type RosterRoot } from "../support/roster-root.ts";
import { Upstream } from "../support/upstream.ts";

const docker = await testDocker();
// The stand-in answers where the real endpoint lives, https://html.duckduckgo.com (port 443): that needs root.
const root = process.getuid?.() === 0;
if (docker && !root)
  console.warn("skipping the web tools end-to-end test: it binds port 443 and needs root");

const ARTICLE = `<!doctype html><html><head><title>How roster locks a box</title></head><body>
<nav>Home · Docs · Blog</nav>
<article><h1>How roster locks a box</h1>
<p>A box has no route out and no DNS. Its one door is the gateway, which judges every request against the operator's grants.</p>
<h2>Credentials</h2><p>The box only ever sees a sentinel; the gateway swaps in the real value in transit.</p>
<table><tr><th>Part</th><th>Job</th></tr><tr><td>gateway</td><td>judge and inject</td></tr></table>
</article><footer>© roster</footer></body></html>`;

describe.skipIf(!docker || !root)(
  "web tools end to end: a real box, the real gateway, the scripted model",
  () => {
    let model: ModelServer;
    let deployment: RosterRoot;
    let ddg: Upstream;
    let docs: Upstream;

    beforeAll(async () => {
      model = await new ModelServer().start("127.0.0.1");
      docs = await Upstream.start({
        tls: true,
        names: ["docs.test"],
        handler: (req, res) => {
          if (req.url === "/paper.pdf") {
            res.writeHead(200, { "content-type": "application/pdf" });
            res.end(minimalPdf("Findings of the roster paper"));
            return;
          }
          res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
          res.end(ARTICLE);
        },
      });
      ddg = await startDuckDuckGo({ tls: true, pageHost: `docs.test:${docs.port}`, port: 443 });
      deployment = await makeRosterRoot(model.baseUrl("127.0.0.1"));
      const caFiles: string[] = [];
      for (const [name, upstream] of [
        ["ddg", ddg],
        ["docs", docs],
      ] as const) {
        const file = join(deployment.root, `${name}-ca.pem`);
        await writeFile(file, upstream.certificate?.caPem ?? "");
        caFiles.push(file);
      }
      const orgFile = join(deployment.paths.config, "org.toml");
      const org = (await readFile(orgFile, "utf8"))
        .replace(
          /\[gateway\]\n/,
          `[gateway]\nupstream_ca = ${JSON.stringify(caFiles)}\nresolve = { "html.duckduckgo.com" = "127.0.0.1", "docs.test" = "127.0.0.1" }\n`,
        )
        .replace(
          '[[grant]]\nname = "web-read"',
          `[[grant]]\nname = "search"\nverdict = "allow"\nmatch = { host = "html.duckduckgo.com", method = "GET" }\n\n[[grant]]\nname = "docs"\nverdict = "allow"\nmatch = { host = "docs.test", method = "GET" }\n\n[[grant]]\nname = "no-blogs"\nverdict = "deny"\nmatch = { host = "blocked.example" }\n\n[[grant]]\nname = "web-read"`,
        );
      await writeFile(orgFile, org);
    });
    afterAll(async () => {
      await model?.stop();
      await Promise.all([ddg?.stop(), docs?.stop()]);
      await deployment?.cleanup();
    });

    it("searches, reads a result as markdown, and hears a refusal as policy", async () => {
      let firstUrl = "";
      model.play(
        { toolCalls: [{ name: "web_search", arguments: { searches: ["roster sandbox"] } }] },
        (request) => {
          const result = [...(request.body.messages ?? [])]
            .reverse()
            .find((m) => m.role === "tool");
          const text =
            typeof result?.content === "string" ? result.content : JSON.stringify(result?.content);
          firstUrl = /\]\((https:\/\/docs\.test[^)]+)\)/.exec(text)?.[1] ?? "";
          return {
            toolCalls: [
              {
                name: "fetch_pages",
                arguments: {
                  urls: [
                    firstUrl,
                    "https://blocked.example/post",
                    `https://docs.test:${docs.port}/paper.pdf`,
                  ],
                },
              },
            ],
          };
        },
        (request) => {
          const result = [...(request.body.messages ?? [])]
            .reverse()
            .find((m) => m.role === "tool");
          return {
            text: `READ:\n${typeof result?.content === "string" ? result.content : JSON.stringify(result?.content)}`,
          };
        },
      );
      const run = await deployment.roster(["run", "elf", "find out how roster locks a box"]);
      expect(run.code, run.stderr).toBe(0);
      expect(firstUrl).toBe(`https://docs.test:${docs.port}/docs/sandbox?ref=ddg&lang=en`);
      expect(ddg.seen.at(-1)?.url).toBe("/html/?q=roster%20sandbox");
      expect(run.stdout).toContain("## How roster locks a box");
      expect(run.stdout).toContain("The box only ever sees a sentinel");
      expect(run.stdout).toContain("| gateway | judge and inject |");
      expect(run.stdout).not.toContain("Home · Docs · Blog");
      expect(run.stdout).toMatch(
        /could not read this page: denied by policy \(rule no-blogs\): policy said no/,
      );
      // the box's pdftotext read the PDF
      expect(run.stdout).toContain("Findings of the roster paper");
      // the live view marked the refusal
      expect(run.stderr).toContain("→ fetch_pages");
    });
  },
);
