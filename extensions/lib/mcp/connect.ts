/**
 * One MCP server, connected with the official SDK's Client: streamable HTTP or
 * SSE through the box's proxy (proxy-fetch.ts), or a stdio child started in the
 * box with the box's environment (so its own requests go through the door
 * too). Everything is bounded: connecting and listing by one deadline, each
 * call by its own, each HTTP response by a byte cap. Results are read with the
 * SDK's loosest schema and checked here, so one malformed tool or content item
 * costs that item, not the server.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import {
  ErrorCode,
  McpError,
  PaginatedResultSchema,
  ResultSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { proxyFetch, type ResponseTooLarge } from "./proxy-fetch.ts";
import type { ServerEntry } from "./servers.ts";

export interface Limits {
  /** Connecting and listing tools, together. */
  listMs: number;
  /** One tools/call. */
  callMs: number;
  /** One HTTP response's body. */
  maxBytes: number;
}

export const DEFAULT_LIMITS: Limits = {
  listMs: 5_000,
  callMs: 60_000,
  maxBytes: 16 * 1024 * 1024,
};

const MAX_PAGES = 10;
const STDERR_TAIL = 2_000;

export interface Connected {
  tools: unknown[];
  call(tool: string, args: Record<string, unknown>, signal?: AbortSignal): Promise<unknown>;
  close(): Promise<void>;
}

function deadline<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms / 1000} s`)), ms);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

/**
 * A failed call said plainly: the SDK's own timeout is not the server's error,
 * and a JSON parse failure means the server's answer was broken. A JSON-RPC
 * error from the server (or the gateway) passes as it is.
 */
function explained(error: unknown, callMs: number, stderr: string): unknown {
  if (error instanceof McpError && error.code === ErrorCode.RequestTimeout)
    return new Error(`no answer within ${callMs / 1000} s; the call was cancelled`);
  if (error instanceof SyntaxError)
    return new Error(`its answer was not valid JSON-RPC (${error.message})`);
  if (error instanceof McpError || !stderr.trim()) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new Error(`${message} (its stderr: ${stderr.trim().split("\n").slice(-5).join(" | ")})`);
}

/** The server's transport: a stdio child whose stderr goes to `onStderr`, or HTTP/SSE through the proxy. */
function openTransport(
  entry: ServerEntry,
  maxBytes: number,
  onOverflow: (error: ResponseTooLarge, tool: string | undefined) => void,
  onStderr: (chunk: string) => void,
): Transport {
  if (entry.transport === "stdio") {
    const [command = "", ...args] = entry.command;
    const stdio = new StdioClientTransport({
      command,
      args,
      // the box's own environment (proxy, CA trust; no secrets in it) and the declared extras
      env: { ...(process.env as Record<string, string>), ...entry.env },
      stderr: "pipe",
    });
    stdio.stderr?.on("data", (chunk: Buffer) => onStderr(chunk.toString("utf8")));
    return stdio;
  }
  const fetch = proxyFetch({ maxBytes, onOverflow });
  const url = new URL(entry.url);
  return entry.transport === "sse"
    ? new SSEClientTransport(url, { fetch })
    : new StreamableHTTPClientTransport(url, { fetch });
}

/** Connects, then lists the server's tools a page at a time, at most MAX_PAGES pages. */
async function listTools(client: Client, transport: Transport, listMs: number): Promise<unknown[]> {
  await client.connect(transport, { timeout: listMs });
  const listed: unknown[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < MAX_PAGES; page++) {
    const result = await client.request(
      { method: "tools/list", params: cursor ? { cursor } : {} },
      PaginatedResultSchema,
      { timeout: listMs },
    );
    if (Array.isArray(result.tools)) listed.push(...result.tools);
    cursor = typeof result.nextCursor === "string" ? result.nextCursor : undefined;
    if (!cursor) break;
  }
  return listed;
}

export async function connectServer(entry: ServerEntry, limits: Limits): Promise<Connected> {
  // a cut response fails the call it answered now, not at its deadline (a cut GET stream: every call)
  const waiting = new Set<{ tool: string; fail: (error: Error) => void }>();
  const onOverflow = (error: ResponseTooLarge, tool: string | undefined) => {
    for (const call of waiting) if (tool === undefined || call.tool === tool) call.fail(error);
  };
  let stderr = "";
  const transport = openTransport(entry, limits.maxBytes, onOverflow, (chunk) => {
    stderr = (stderr + chunk).slice(-STDERR_TAIL);
  });
  const client = new Client({ name: "roster-box", version: "1.0.0" }, { capabilities: {} });
  // a transport error is reported through the calls it breaks; left unhandled it would only log
  client.onerror = () => undefined;
  const close = async () => {
    await client.close().catch(() => undefined);
  };
  const withStderr = (error: unknown) => {
    const message = error instanceof Error ? error.message : String(error);
    const tail = stderr.trim().split("\n").slice(-5).join(" | ");
    return new Error(tail ? `${message} (its stderr: ${tail})` : message);
  };
  try {
    const tools = await deadline(
      listTools(client, transport, limits.listMs),
      limits.listMs,
      "connecting and listing tools",
    );
    return {
      tools,
      close,
      call(tool, args, signal) {
        let pending: { tool: string; fail: (error: Error) => void } | undefined;
        const cut = new Promise<never>((_, reject) => {
          pending = { tool, fail: reject };
          waiting.add(pending);
        });
        const request = client.request(
          { method: "tools/call", params: { name: tool, arguments: args } },
          ResultSchema,
          { timeout: limits.callMs, ...(signal ? { signal } : {}) },
        );
        return Promise.race([request, cut])
          .catch((error: unknown) => {
            throw explained(error, limits.callMs, entry.transport === "stdio" ? stderr : "");
          })
          .finally(() => {
            if (pending) waiting.delete(pending);
          });
      },
    };
  } catch (error) {
    await close();
    throw withStderr(error);
  }
}
