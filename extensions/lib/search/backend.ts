/**
 * A keyless search engine behind one small interface, so another engine is one
 * new file and nothing else changes.
 */
export interface SearchResult {
  title: string;
  url: string;
  snippet: string;
}

export interface SearchBackend {
  readonly name: string;
  /** Ranked results, best first; throws SearchFailure with a reason the model can read. */
  search(query: string, signal?: AbortSignal): Promise<SearchResult[]>;
}

export class SearchFailure extends Error {}

export function renderResults(query: string, outcome: SearchResult[] | { error: string }): string {
  const heading = `## Results for ${JSON.stringify(query)}`;
  if ("error" in outcome) return `${heading}\n\n(search failed: ${outcome.error})`;
  if (outcome.length === 0) return `${heading}\n\n(no results)`;
  const lines = outcome.map(
    (result, index) =>
      `${index + 1}. [${result.title || result.url}](${result.url})${result.snippet ? `\n   ${result.snippet}` : ""}`,
  );
  return `${heading}\n\n${lines.join("\n")}`;
}
