import { describe, expect, it } from "vitest";
import { htmlToMarkdown } from "../../extensions/lib/extract.ts";

/** A docs page's callouts are the page's words; an article's related-links box is not. */
const prose = (topic: string) =>
  `<p>${`Retries with backoff keep a client polite when the ${topic} is busy, and a person reading this wants every step. `.repeat(6)}</p>`;

const page = (asides: string) => `<!doctype html><html><head><title>Retries</title></head><body>
<nav><a href="/">Home</a> <a href="/docs">Docs</a></nav>
<main><article><h1>Retries and backoff</h1>${prose("server")}
${asides}
${prose("queue")}</article></main></body></html>`;

describe("callouts in what fetch_pages reads", () => {
  it("keeps a note or warning aside inside the article, as a quotation", () => {
    const { markdown, method } = htmlToMarkdown(
      page(`<aside class="callout warning"><p>Make retried side effects idempotent, or a retry charges twice.</p></aside>
<aside class="starlight-aside starlight-aside--tip"><p>Cap the delay at thirty seconds.</p></aside>
<aside role="note"><p>Jitter spreads the retries out.</p></aside>`),
      "https://docs.test/retries",
    );
    expect(method).toBe("readability");
    expect(markdown).toContain("> Make retried side effects idempotent, or a retry charges twice.");
    expect(markdown).toContain("> Cap the delay at thirty seconds.");
    expect(markdown).toContain("> Jitter spreads the retries out.");
  });

  it("still drops an aside that is not a callout, or is mostly links", () => {
    const { markdown } = htmlToMarkdown(
      page(`<aside class="related"><h3>Related stories</h3><p>Our readers also liked these pieces a lot.</p></aside>
<aside class="note"><a href="/a">Ten retry libraries compared</a> <a href="/b">Backoff in depth</a></aside>`),
      "https://docs.test/retries",
    );
    expect(markdown).toContain("Retries with backoff keep a client polite");
    expect(markdown).not.toContain("Related stories");
    expect(markdown).not.toContain("Ten retry libraries compared");
  });
});
