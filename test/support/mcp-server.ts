/**
 * A real MCP server for the tests, built with the official SDK (low-level
 * Server, streamable HTTP, stateless): HTTPS with a certificate from the tests'
 * own CA, and a bearer token it checks itself (401 without it, as a real one
 * does). Its tools are the test's; it records the Authorization header of every
 * request and every tool call, so a test can see what the gateway injected and
 * what ran.
 */
import { writeFile } from "node:fs/promises";
import type { IncomingMessage, ServerResponse } from "node:http";
import { join } from "node:path";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { Upstream } from "./upstream.ts";

export interface McpTestTool {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
  run(args: Record<string, unknown>): string;
}

export interface McpTestServer {
  upstream: Upstream;
  caFile: string;
  /** https://<name>:<port>/mcp */
  url: string;
  /** The Authorization header of every request, in order. */
  authorizations: Array<string | undefined>;
  calls: Array<{ tool: string; args: Record<string, unknown> }>;
  stop(): Promise<void>;
}

function mcpServer(tools: McpTestTool[], calls: McpTestServer["calls"]): Server {
  const server = new Server(
    { name: "roster-test", version: "1.0.0" },
    { capabilities: { tools: {} } },
  );
  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: tools.map(({ name, description, inputSchema }) => ({ name, description, inputSchema })),
  }));
  server.setRequestHandler(CallToolRequestSchema, (request) => {
    const args = request.params.arguments ?? {};
    calls.push({ tool: request.params.name, args });
    const tool = tools.find((candidate) => candidate.name === request.params.name);
    if (!tool) return { isError: true, content: [{ type: "text", text: "no such tool" }] };
    return { content: [{ type: "text", text: tool.run(args) }] };
  });
  return server;
}

export async function startMcpServer(options: {
  name: string;
  token: string;
  dir: string;
  tools: McpTestTool[];
  tls?: boolean;
}): Promise<McpTestServer> {
  const authorizations: McpTestServer["authorizations"] = [];
  const calls: McpTestServer["calls"] = [];
  const handler = async (req: IncomingMessage, res: ServerResponse, body: Buffer) => {
    authorizations.push(req.headers.authorization);
    if (req.headers.authorization !== `Bearer ${options.token}`) {
      res.writeHead(401, { "content-type": "application/json", "www-authenticate": "Bearer" });
      res.end(JSON.stringify({ error: "invalid_token" }));
      return;
    }
    if (req.url !== "/mcp") {
      res.writeHead(404).end();
      return;
    }
    // stateless: a server and transport per request, as the SDK's examples do
    const server = mcpServer(options.tools, calls);
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on("close", () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    const parsed: unknown = body.length ? JSON.parse(body.toString("utf8")) : undefined;
    await transport.handleRequest(req, res, parsed);
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
    authorizations,
    calls,
    stop: () => upstream.stop(),
  };
}
