import { describe, expect, it } from "vitest";
import { htmlToMarkdown } from "../../extensions/lib/extract.ts";
import { renderReason, THIN_TEXT_CHARS } from "../../extensions/lib/render/when.ts";

/** When fetch_pages renders a page rather than reading it as served. */
const reasonFor = (html: string) =>
  renderReason(html, htmlToMarkdown(html, "https://x.test/").markdown);
const prose = `<p>${"A sentence a person reads on the page as it is served. ".repeat(20)}</p>`;

describe("when a page is rendered", () => {
  it("renders a page with scripts and little to read", () => {
    expect(
      reasonFor(`<html><body><div id="root"></div><script src="/app.js"></script></body></html>`),
    ).toMatch(/^its served HTML has \d+ readable characters and scripts$/);
  });

  it("renders an app shell even when its static chrome has plenty of text", () => {
    const html = `<html><body><nav>${prose}</nav><div id="__next"></div><script src="/_next/app.js"></script></body></html>`;
    expect(reasonFor(html)).toBe("it is an app shell (an empty #__next its scripts fill)");
  });

  it("reads a page as served when it has no scripts, however thin, or enough text", () => {
    expect(reasonFor(`<html><body><p>Short.</p></body></html>`)).toBeUndefined();
    expect(
      reasonFor(`<html><body><article>${prose}</article><script>track()</script></body></html>`),
    ).toBeUndefined();
    expect(prose.length).toBeGreaterThan(THIN_TEXT_CHARS);
  });
});
