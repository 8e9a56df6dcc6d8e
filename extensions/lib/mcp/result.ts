/**
 * An MCP tool's answer, or its failure, as text the model reads: content items
 * flattened (text as is, binary parts named, not dumped), structured content
 * as JSON when there is no text, the whole cut at a bound that says so. A
 * JSON-RPC error is shown with its code and the server's (or the gateway's)
 * message as sent, so a refusal's rule and hint reach the model intact.
 */

export const MAX_RESULT_CHARS = 64_000;
const MAX_ERROR_CHARS = 4_000;

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

function describeBinary(kind: string, item: Record<string, unknown>): string {
  const mime = typeof item.mimeType === "string" ? item.mimeType : "unknown type";
  const size = typeof item.data === "string" ? Math.floor((item.data.length * 3) / 4) : 0;
  return `[${kind}, ${mime}, about ${size} bytes: not shown]`;
}

function renderItem(item: unknown): string {
  if (!isRecord(item)) return "[an unreadable content item]";
  switch (item.type) {
    case "text":
      return typeof item.text === "string" ? item.text : "";
    case "image":
    case "audio":
      return describeBinary(item.type, item);
    case "resource": {
      const resource = isRecord(item.resource) ? item.resource : {};
      const uri = typeof resource.uri === "string" ? resource.uri : "?";
      return typeof resource.text === "string"
        ? `[resource ${uri}]\n${resource.text}`
        : `[resource ${uri}: binary, not shown]`;
    }
    case "resource_link":
      return `[resource link ${typeof item.uri === "string" ? item.uri : "?"}${typeof item.name === "string" ? ` (${item.name})` : ""}]`;
    default:
      return `[content of type ${JSON.stringify(String(item.type)).slice(0, 40)}: not shown]`;
  }
}

/** Cut to `max` characters, saying how much was left out. */
export function bounded(text: string, max: number): string {
  if (text.length <= max) return text;
  return `${text.slice(0, max)}\n[… cut: the result was ${text.length} characters, only the first ${max} are shown]`;
}

export function renderResult(result: unknown): { text: string; isError: boolean } {
  if (!isRecord(result)) return { text: "the server's answer was not an object", isError: true };
  const isError = result.isError === true;
  const parts = Array.isArray(result.content) ? result.content.map(renderItem) : [];
  let text = parts.filter((part) => part !== "").join("\n");
  if (!text && result.structuredContent !== undefined) {
    text = JSON.stringify(result.structuredContent, null, 2) ?? "";
  }
  if (!text && "toolResult" in result) text = JSON.stringify(result.toolResult, null, 2) ?? "";
  return { text: bounded(text || "(the tool returned nothing)", MAX_RESULT_CHARS), isError };
}

/** A failed call in words: the JSON-RPC error's code and message as sent, or what went wrong on the way. */
export function renderFailure(server: string, tool: string, error: unknown): string {
  const { code, message } = error as { code?: unknown; message?: unknown };
  const said = typeof message === "string" ? message : String(error);
  // the SDK's McpError prefixes "MCP error <code>: "; the message after it is the server's own
  const own = said.replace(/^MCP error -?\d+: /, "");
  const text =
    typeof code === "number" && Number.isInteger(code)
      ? `MCP server ${server} answered ${tool} with JSON-RPC error ${code}: ${own}`
      : `MCP server ${server} failed on ${tool}: ${own}`;
  return bounded(text, MAX_ERROR_CHARS);
}
