/**
 * TEST DOUBLE of a hostile MCP server, for the tests that a bad server can't
 * hang or crash a box: no real server misbehaves on demand, so this one speaks
 * streamable HTTP's JSON-RPC by hand and breaks it on purpose. Its tool list
 * mixes one good tool with names and schemas built to break registration; its
 * calls answer with an SSE stream that never ends (`endless`), a 100 MB
 * result (`huge`), or malformed JSON-RPC (`garbage`). HTTPS from the tests' CA.
 */
import { writeFile } from "node:fs/promises";
import type { IncomingMessage, ServerResponse } from "node:http";
import { join } from "node:path";
import { Upstream } from "./upstream.ts";

export const HOSTILE_TOOLS: unknown[] = [
  { name: "fine", description: "answers ok", inputSchema: { type: "object", properties: {} } },
  { name: "endless", inputSchema: { type: "object" } },
  { name: "huge", inputSchema: { type: "object" } },
  { name: "garbage", inputSchema: { type: "object" } },
  { name: "x".repeat(500), inputSchema: { type: "object" } },
  { name: "../../bad name\n\u0000!", inputSchema: { type: "object" } },
  { name: 42, inputSchema: { type: "object" } },
  { name: "", inputSchema: { type: "object" } },
  {
    name: "loop",
    inputSchema: {
      type: "object",
      properties: { a: { $ref: "#" } },
      $defs: { b: { $ref: "#/$defs/b" } },
    },
  },
  {
    name: "strange",
    inputSchema: {
      type: "object",
      properties: { "bad key!": { type: "string" }, p: { type: "string", pattern: "((" } },
      required: "p",
    },
  },
  { name: "not_object", inputSchema: { type: "string" } },
];

const HUGE_BYTES = 100 * 1024 * 1024;

function json(res: ServerResponse, body: unknown): void {
  res.writeHead(200, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
}

function drained(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off("drain", done);
      res.off("close", done);
      resolve();
    };
    res.on("drain", done);
    res.on("close", done);
  });
}

async function huge(res: ServerResponse, id: unknown): Promise<void> {
  res.writeHead(200, { "content-type": "application/json" });
  res.write(
    `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":{"content":[{"type":"text","text":"`,
  );
  const chunk = Buffer.alloc(1024 * 1024, "x");
  for (let sent = 0; sent < HUGE_BYTES && !res.destroyed; sent += chunk.length) {
    if (!res.write(chunk)) await drained(res);
  }
  res.end('"}]}}');
}

function endless(res: ServerResponse): void {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  res.write(": the answer is coming\n\n");
  const timer = setInterval(() => res.write(": still coming\n\n"), 500);
  res.on("close", () => clearInterval(timer));
}

export interface HostileMcp {
  upstream: Upstream;
  caFile: string;
  url: string;
  /** Methods and tool names it was asked for, in order. */
  asked: string[];
  stop(): Promise<void>;
}

export async function startHostileMcp(options: {
  name: string;
  dir: string;
  tls?: boolean;
}): Promise<HostileMcp> {
  const asked: string[] = [];
  const handler = async (req: IncomingMessage, res: ServerResponse, body: Buffer) => {
    if (req.method === "GET") {
      res.writeHead(405).end();
      return;
    }
    if (req.method !== "POST") {
      res.writeHead(200).end();
      return;
    }
    let message: {
      id?: unknown;
      method?: string;
      params?: { name?: string; protocolVersion?: string };
    };
    try {
      message = JSON.parse(body.toString("utf8"));
    } catch {
      res.writeHead(400).end();
      return;
    }
    asked.push(
      message.method === "tools/call"
        ? `tools/call ${message.params?.name}`
        : String(message.method),
    );
    if (message.id === undefined) {
      res.writeHead(202).end();
      return;
    }
    const result = (value: unknown) => json(res, { jsonrpc: "2.0", id: message.id, result: value });
    switch (message.method === "tools/call" ? message.params?.name : message.method) {
      case "initialize":
        return result({
          protocolVersion: message.params?.protocolVersion ?? "2025-06-18",
          capabilities: { tools: {} },
          serverInfo: { name: "hostile", version: "0.0.1" },
        });
      case "tools/list":
        return result({ tools: HOSTILE_TOOLS });
      case "fine":
        return result({ content: [{ type: "text", text: "fine: all good" }] });
      case "endless":
        return endless(res);
      case "huge":
        return huge(res, message.id);
      case "garbage":
        res.writeHead(200, { "content-type": "application/json" });
        res.end(`{"jsonrpc":"2.0","id":${JSON.stringify(message.id)},"result":{"content":[{"ty`);
        return;
      default:
        return json(res, {
          jsonrpc: "2.0",
          id: message.id,
          error: { code: -32601, message: "no such method" },
        });
    }
  };
  // plain HTTP only for host tests that talk to it directly (a box reaches it through the gateway)
  const tls = options.tls ?? true;
  const upstream = await Upstream.start({ tls, names: [options.name], handler });
  const caFile = join(options.dir, `${options.name}-ca.pem`);
  if (upstream.certificate) await writeFile(caFile, upstream.certificate.caPem);
  return {
    upstream,
    caFile,
    url: `${tls ? "https" : "http"}://${options.name}:${upstream.port}/mcp`,
    asked,
    stop: () => upstream.stop(),
  };
}
