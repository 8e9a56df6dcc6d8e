/**
 * web_search and fetch_pages: the worker's eyes on the web. Every byte goes
 * through the box's proxy — the gateway decides what may be reached; a refusal
 * comes back as words the model can act on.
 */
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { Type } from "@sinclair/typebox";
import type { SearchBackend } from "./lib/search/backend.ts";
import { guarded } from "./lib/tool-guard.ts";

// The parsers (cheerio, linkedom, Readability, turndown) load on first use, not
// when pi starts: most runs never touch the web, and every run pays pi's start.
let backend: SearchBackend | undefined;
async function searchBackend(): Promise<SearchBackend> {
  const { DuckDuckGo } = await import("./lib/search/duckduckgo.ts");
  backend ??= new DuckDuckGo();
  return backend;
}

function loadWeb(pi: ExtensionAPI): void {
  pi.registerTool({
    name: "web_search",
    label: "Web search",
    description:
      "Search the web. Give one or more short queries; you get ranked results (title, URL, snippet) per query. " +
      "Snippets are not enough to answer from: pick the most promising URLs and read them with fetch_pages, " +
      "then answer from what you read. A query refused by policy says so; don't retry it.",
    parameters: Type.Object({
      searches: Type.Array(Type.String({ minLength: 1 }), {
        minItems: 1,
        maxItems: 5,
        description: "search queries, run one after another",
      }),
    }),
    async execute(_id, params, signal) {
      const { renderResults, SearchFailure } = await import("./lib/search/backend.ts");
      const engine = await searchBackend();
      const sections: string[] = [];
      for (const query of params.searches) {
        try {
          sections.push(renderResults(query, await engine.search(query, signal)));
        } catch (error) {
          const reason =
            error instanceof SearchFailure ? error.message : `failed: ${(error as Error).message}`;
          sections.push(renderResults(query, { error: reason }));
        }
      }
      return {
        content: [{ type: "text", text: sections.join("\n\n") }],
        details: { backend: engine.name },
      };
    },
  });

  pi.registerTool({
    name: "fetch_pages",
    label: "Fetch pages",
    description:
      "Read web pages. Give http(s) URLs (from web_search or the task); each comes back as markdown of its main " +
      "content with its title and final URL (text, JSON and PDF too), in the order asked. A page whose text only its " +
      "scripts make is rendered in a browser first, and says so. Long pages are cut; the " +
      "cut says which start offset reads on. A page refused by policy says so; don't retry it.",
    parameters: Type.Object({
      urls: Type.Array(Type.String({ minLength: 1 }), {
        minItems: 1,
        maxItems: 10,
        description: "page URLs",
      }),
      start: Type.Optional(
        Type.Integer({
          minimum: 0,
          description: "character offset to start reading at, to continue a cut page",
        }),
      ),
      render: Type.Optional(
        Type.Boolean({
          description:
            "true: run each page's scripts in a browser before reading it; false: never. Unset: pages that need it are rendered",
        }),
      ),
    }),
    async execute(_id, params, signal) {
      const { fetchPages, normaliseUrls, PAGE_DEFAULTS, renderPages } = await import(
        "./lib/pages.ts"
      );
      const { urls, rejected } = normaliseUrls(params.urls);
      const pages = await fetchPages(urls, {
        ...PAGE_DEFAULTS,
        start: params.start ?? 0,
        signal,
        render: params.render,
      });
      return {
        content: [{ type: "text", text: renderPages(pages, rejected) }],
        details: {
          urls: pages.map((page) => page.url),
          errors: pages.filter((page) => page.error).length,
          rendered: pages.filter((page) => page.rendered).map((page) => page.url),
        },
      };
    },
  });
}

// every tool call runs guarded: an error its work raises later ends that call, not the run
export default guarded("web", loadWeb);
