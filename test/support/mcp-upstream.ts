/**
 * A real MCP server for gateway tests and the MCP bench, built with the
 * official SDK: streamable HTTP (a session per client), bearer auth, behind
 * TLS signed by its own test CA. It counts every tool call and records the
 * Authorization each request carried, so a test can see what the gateway
 * injected and how many times a held call really ran. Tools answer in text
 * (`issues_close` always fails, as a JSON-RPC error); their names are plain
 * names to match globs against.
 */
import { randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { Server as McpServer } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import {
  CallToolRequestSchema,
  isInitializeRequest,
  ListToolsRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { makeServerCertificate, type TestCertificate } from "./test-ca.ts";

export const MCP_TOOLS = [
  "echo",
  "issues_list",
  "issues_create",
  "issues_close",
  "delete_repo",
] as const;

export class McpUpstream {
  /** Tool calls the server actually ran, by tool name. */
  readonly calls = new Map<string, number>();
  /** The Authorization header of every request that reached the server. */
  readonly authorizations: (string | undefined)[] = [];
  private readonly sessions = new Map<string, StreamableHTTPServerTransport>();

  private constructor(
    private readonly server: Server,
    readonly certificate: TestCertificate,
    readonly token: string,
  ) {}

  static async start(options: { names: string[]; token: string }): Promise<McpUpstream> {
    const certificate = await makeServerCertificate(options.names);
    let upstream: McpUpstream | undefined;
    const server = createServer(
      { cert: certificate.certPem, key: certificate.keyPem },
      (req, res) => {
        void upstream?.serve(req, res).catch((error: unknown) => {
          if (!res.headersSent) res.writeHead(500, { "content-type": "application/json" });
          res.end(JSON.stringify({ error: String(error) }));
        });
      },
    );
    upstream = new McpUpstream(server, certificate, options.token);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return upstream;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  count(tool: string): number {
    return this.calls.get(tool) ?? 0;
  }

  private async serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    this.authorizations.push(req.headers.authorization);
    if (req.headers.authorization !== `Bearer ${this.token}`) {
      res.writeHead(401, {
        "content-type": "application/json",
        "www-authenticate": 'Bearer realm="mcp-upstream"',
      });
      res.end(JSON.stringify({ error: "missing or wrong bearer token" }));
      return;
    }
    let body: unknown;
    if (req.method === "POST") {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    }
    const id = req.headers["mcp-session-id"];
    let transport = typeof id === "string" ? this.sessions.get(id) : undefined;
    if (!transport && req.method === "POST" && isInitializeRequest(body)) {
      const fresh = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (sessionId) => {
          this.sessions.set(sessionId, fresh);
        },
      });
      fresh.onclose = () => {
        if (fresh.sessionId) this.sessions.delete(fresh.sessionId);
      };
      await this.mcpServer().connect(fresh);
      transport = fresh;
    }
    if (!transport) {
      res.writeHead(404, { "content-type": "application/json" });
      res.end(
        JSON.stringify({
          jsonrpc: "2.0",
          id: null,
          error: { code: -32001, message: "Session not found" },
        }),
      );
      return;
    }
    await transport.handleRequest(req, res, body);
  }

  /** One SDK server per session (an SDK server serves one transport). */
  private mcpServer(): McpServer {
    const server = new McpServer(
      { name: "mcp-upstream", version: "1.0.0" },
      { capabilities: { tools: {} } },
    );
    server.setRequestHandler(ListToolsRequestSchema, () => ({
      tools: MCP_TOOLS.map((name) => ({
        name,
        description: `the test server's ${name}`,
        inputSchema: {
          type: "object" as const,
          properties: { title: { type: "string" }, text: { type: "string" } },
        },
      })),
    }));
    server.setRequestHandler(CallToolRequestSchema, (request) => {
      const name = request.params.name;
      this.calls.set(name, this.count(name) + 1);
      if (name === "issues_close") throw new Error("no such issue");
      return {
        content: [
          {
            type: "text" as const,
            text: `${name} ran (call ${this.count(name)}) with ${JSON.stringify(request.params.arguments ?? {})}`,
          },
        ],
      };
    });
    return server;
  }

  async stop(): Promise<void> {
    for (const transport of this.sessions.values()) await transport.close();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
