import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { renderResults } from "../../extensions/lib/search/backend.ts";
import { DuckDuckGo, unwrapResultUrl } from "../../extensions/lib/search/duckduckgo.ts";
import { startDuckDuckGo } from "../support/duckduckgo-stand-in.ts";
import type { Upstream } from "../support/upstream.ts";

let ddg: Upstream;
let backend: DuckDuckGo;

beforeAll(async () => {
  ddg = await startDuckDuckGo({ tls: false, pageHost: "docs.example:8443" });
  backend = new DuckDuckGo(`http://127.0.0.1:${ddg.port}/html/`);
});
afterAll(() => ddg.stop());

describe("web_search over DuckDuckGo's HTML endpoint", () => {
  it("ranks results, unwraps redirect links, drops ads and duplicates", async () => {
    const results = await backend.search("roster sandbox");
    expect(results).toEqual([
      {
        title: "Roster sandbox documentation",
        url: "https://docs.example:8443/docs/sandbox?ref=ddg&lang=en",
        snippet:
          "How boxes are locked: no route out, no DNS, and one gateway that judges every request.",
      },
      {
        title: "A blog post about & sandboxes",
        url: "https://blocked.example/post",
        snippet: "Opinions on sandboxing agents.",
      },
      {
        title: "A direct link",
        url: "https://direct.example/plain",
        snippet: "Some results are not wrapped.",
      },
    ]);
    expect(ddg.seen.at(-1)?.url).toBe("/html/?q=roster%20sandbox");
  });

  it("renders compact markdown per query", async () => {
    const text = renderResults("roster sandbox", await backend.search("roster sandbox"));
    expect(text).toContain('## Results for "roster sandbox"');
    expect(text).toContain(
      "1. [Roster sandbox documentation](https://docs.example:8443/docs/sandbox?ref=ddg&lang=en)\n   How boxes",
    );
  });

  it("says so when there are no results, and when the page isn't a result page", async () => {
    expect(await backend.search("no results for zxqv")).toEqual([]);
    await expect(backend.search("blocked please")).rejects.toThrow(/not a DuckDuckGo result page/);
    const wrongPath = new DuckDuckGo(`http://127.0.0.1:${ddg.port}/nothing-here/`);
    await expect(wrongPath.search("x")).rejects.toThrow("HTTP 404 from DuckDuckGo");
    const closed = new DuckDuckGo("http://127.0.0.1:9/html/");
    await expect(closed.search("x")).rejects.toThrow(/ECONNREFUSED/);
  });

  it("unwraps only DuckDuckGo's own redirects", () => {
    expect(unwrapResultUrl("//duckduckgo.com/l/?uddg=https%3A%2F%2Fa.example%2Fx&rut=1")).toBe(
      "https://a.example/x",
    );
    expect(unwrapResultUrl("https://duckduckgo.com/y.js?ad_domain=x")).toBeUndefined();
    expect(unwrapResultUrl("javascript:alert(1)")).toBeUndefined();
    expect(unwrapResultUrl("https://b.example/y")).toBe("https://b.example/y");
  });
});
