/**
 * TEST DOUBLE for DuckDuckGo's keyless HTML endpoint, which can't be reached
 * from here. It speaks the same protocol — GET /html/?q=… answered with a
 * result page — and serves saved pages written in DuckDuckGo's real markup
 * (test/fixtures/duckduckgo/). Queries choose the page: "no results …" and
 * "blocked …" get those pages, anything else the result list, with PAGE_HOST
 * replaced by the host the test serves its pages from.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { PROJECT_ROOT } from "../../runner/ground/version.ts";
import { Upstream } from "./upstream.ts";

const fixture = (name: string) =>
  readFileSync(join(PROJECT_ROOT, "test/fixtures/duckduckgo", name), "utf8");

export async function startDuckDuckGo(options: {
  tls: boolean;
  pageHost: string;
  port?: number;
}): Promise<Upstream> {
  return Upstream.start({
    tls: options.tls,
    ...(options.port !== undefined ? { port: options.port } : {}),
    names: ["html.duckduckgo.com"],
    handler: (req, res) => {
      const url = new URL(req.url ?? "/", "https://html.duckduckgo.com");
      if (url.pathname !== "/html/" || !url.searchParams.has("q")) {
        res.writeHead(404, { "content-type": "text/plain" });
        res.end("not found");
        return;
      }
      const query = url.searchParams.get("q") ?? "";
      const page = query.startsWith("no results")
        ? fixture("no-results.html")
        : query.startsWith("blocked")
          ? fixture("anomaly.html")
          : fixture("results.html").replaceAll("PAGE_HOST", options.pageHost);
      res.writeHead(200, { "content-type": "text/html; charset=UTF-8" });
      res.end(page);
    },
  });
}
