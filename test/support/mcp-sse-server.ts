/**
 * A real MCP server on the older HTTP+SSE transport, built with the official
 * SDK (its low-level Server behind SSEServerTransport): GET /sse opens the
 * event stream that names the endpoint, POST /messages?sessionId=… carries the
 * client's requests. Plain HTTP on loopback, for host tests of the box's
 * client; its tools are the test's.
 */
import { createServer, type Server as HttpServer } from "node:http";
import type { AddressInfo } from "node:net";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { SSEServerTransport } from "@modelcontextprotocol/sdk/server/sse.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import type { McpTestTool } from "./mcp-server.ts";

export interface SseMcpServer {
  /** http://127.0.0.1:<port>/sse */
  url: string;
  calls: Array<{ tool: string; args: Record<string, unknown> }>;
  stop(): Promise<void>;
}

export async function startSseMcpServer(tools: McpTestTool[]): Promise<SseMcpServer> {
  const calls: SseMcpServer["calls"] = [];
  const sessions = new Map<string, SSEServerTransport>();
  const http: HttpServer = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    if (req.method === "GET" && url.pathname === "/sse") {
      const transport = new SSEServerTransport("/messages", res);
      sessions.set(transport.sessionId, transport);
      res.on("close", () => sessions.delete(transport.sessionId));
      const server = new Server(
        { name: "roster-test-sse", version: "1.0.0" },
        { capabilities: { tools: {} } },
      );
      server.setRequestHandler(ListToolsRequestSchema, () => ({
        tools: tools.map(({ name, description, inputSchema }) => ({
          name,
          description,
          inputSchema,
        })),
      }));
      server.setRequestHandler(CallToolRequestSchema, (request) => {
        const args = request.params.arguments ?? {};
        calls.push({ tool: request.params.name, args });
        const tool = tools.find((candidate) => candidate.name === request.params.name);
        if (!tool) return { isError: true, content: [{ type: "text", text: "no such tool" }] };
        return { content: [{ type: "text", text: tool.run(args) }] };
      });
      void server.connect(transport);
      return;
    }
    const session = sessions.get(url.searchParams.get("sessionId") ?? "");
    if (req.method === "POST" && url.pathname === "/messages" && session) {
      void session.handlePostMessage(req, res);
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((ready) => http.listen(0, "127.0.0.1", ready));
  const { port } = http.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/sse`,
    calls,
    stop: async () => {
      for (const transport of sessions.values()) await transport.close();
      http.closeAllConnections();
      await new Promise((closed) => http.close(closed));
    },
  };
}
