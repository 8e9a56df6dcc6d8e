/**
 * The official MCP SDK client over streamable HTTP, the way a box reaches a
 * server: undici through the gateway's proxy (CONNECT, roster's CA trusted),
 * or straight at the server with its own CA (the bench's baseline).
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { Agent, type Dispatcher, ProxyAgent, fetch as undiciFetch } from "undici";

export interface McpConnection {
  client: Client;
  close(): Promise<void>;
}

type FetchLike = (url: string | URL, init?: RequestInit) => Promise<Response>;

function fetchThrough(dispatcher: Dispatcher): FetchLike {
  return async (url, init) =>
    (await undiciFetch(url, {
      ...(init as Parameters<typeof undiciFetch>[1]),
      dispatcher,
    })) as unknown as Response;
}

/** Connects (initialize included) through `proxy` trusting `ca`, or directly when `proxy` is undefined. */
export async function connectMcp(
  url: string,
  options: { proxy?: string; ca: string; headers?: Record<string, string> },
): Promise<McpConnection> {
  const dispatcher = options.proxy
    ? new ProxyAgent({ uri: options.proxy, proxyTunnel: true, requestTls: { ca: options.ca } })
    : new Agent({ connect: { ca: options.ca } });
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    fetch: fetchThrough(dispatcher),
    ...(options.headers ? { requestInit: { headers: options.headers } } : {}),
  });
  const client = new Client({ name: "roster-test", version: "1.0.0" });
  try {
    await client.connect(transport);
  } catch (error) {
    await dispatcher.close();
    throw error;
  }
  return {
    client,
    close: async () => {
      await client.close().catch(() => undefined);
      await dispatcher.close();
    },
  };
}

/** The text of a tool result's content, joined. */
export function resultText(result: unknown): string {
  const content = (result as { content?: { type?: string; text?: string }[] }).content ?? [];
  return content.map((part) => (part.type === "text" ? (part.text ?? "") : "")).join("\n");
}
