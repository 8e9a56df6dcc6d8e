/**
 * A real MCP server (the official SDK's Server and streamable HTTP transport,
 * stateless, bearer auth, TLS from its own test CA) reached two ways, the two
 * ways servers in the wild read a request body:
 * - `/sdk`: the SDK transport reads the body itself (media type parsed
 *   case-insensitively, charset ignored, UTF-8 with its byte-order mark
 *   dropped);
 * - `/inflating`: the body read first as express.json() reads it (a JSON
 *   media type in any case, a gzip, deflate or br Content-Encoding undone),
 *   then handed to the transport parsed — the SDK's own express app does this.
 * It counts every tool call it runs, so a test sees what really ran.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { createServer, type Server as HttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import { MIMEType } from "node:util";
import { brotliDecompressSync, gunzipSync, inflateSync } from "node:zlib";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { makeServerCertificate, type TestCertificate } from "./test-ca.ts";

export const READER_TOOLS = ["echo", "issues_list", "issues_create", "delete_repo"] as const;

export class McpReaders {
  /** Tool calls the server actually ran, by tool name. */
  readonly calls = new Map<string, number>();

  private constructor(
    private readonly server: HttpsServer,
    readonly certificate: TestCertificate,
    private readonly token: string,
  ) {}

  static async start(options: { names: string[]; token: string }): Promise<McpReaders> {
    const certificate = await makeServerCertificate(options.names);
    let readers: McpReaders | undefined;
    const server = createServer(
      { cert: certificate.certPem, key: certificate.keyPem },
      (req, res) => {
        void readers?.serve(req, res).catch((error: unknown) => {
          if (!res.headersSent) res.writeHead(500, { "content-type": "application/json" });
          res.end(JSON.stringify({ error: String(error) }));
        });
      },
    );
    readers = new McpReaders(server, certificate, options.token);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return readers;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  count(tool: string): number {
    return this.calls.get(tool) ?? 0;
  }

  ran(): number {
    return [...this.calls.values()].reduce((sum, count) => sum + count, 0);
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (req.headers.authorization !== `Bearer ${this.token}`) {
      res.writeHead(401, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: "missing or wrong bearer token" }));
      return;
    }
    const server = this.mcpServer();
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on("close", () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    if (req.url === "/inflating") {
      const parsed = await readAsExpressJson(req);
      if (parsed === undefined) {
        res.writeHead(415).end();
        return;
      }
      await transport.handleRequest(req, res, parsed);
    } else await transport.handleRequest(req, res);
  }

  private mcpServer(): Server {
    const server = new Server(
      { name: "mcp-readers", version: "1.0.0" },
      { capabilities: { tools: {} } },
    );
    server.setRequestHandler(ListToolsRequestSchema, () => ({
      tools: READER_TOOLS.map((name) => ({
        name,
        description: name,
        inputSchema: { type: "object" as const },
      })),
    }));
    server.setRequestHandler(CallToolRequestSchema, (request) => {
      const name = request.params.name;
      this.calls.set(name, this.count(name) + 1);
      return { content: [{ type: "text" as const, text: `${name} ran` }] };
    });
    return server;
  }
}

/** As express.json() does: a JSON media type in any case, the Content-Encoding undone. */
async function readAsExpressJson(req: IncomingMessage): Promise<unknown> {
  const type = req.headers["content-type"];
  if (!type || new MIMEType(type).essence !== "application/json") return undefined;
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  let body = Buffer.concat(chunks);
  const coding = (req.headers["content-encoding"] ?? "identity").toLowerCase();
  if (coding === "gzip") body = gunzipSync(body);
  else if (coding === "deflate") body = inflateSync(body);
  else if (coding === "br") body = brotliDecompressSync(body);
  return JSON.parse(new TextDecoder().decode(body));
}
