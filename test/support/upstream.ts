/**
 * Real HTTPS (and plain HTTP) upstream servers for gateway tests: they record
 * what arrives (so tests can see which headers the gateway forwarded) and
 * answer with a handler of the test's choosing.
 */
import {
  createServer as createHttpServer,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import { makeServerCertificate, type TestCertificate } from "./test-ca.ts";

export interface SeenRequest {
  method: string;
  url: string;
  headers: IncomingMessage["headers"];
  body: string;
}

export type Handler = (
  req: IncomingMessage,
  res: ServerResponse,
  body: Buffer,
) => void | Promise<void>;

export const echoHandler: Handler = (req, res, body) => {
  const text = JSON.stringify({ method: req.method, url: req.url, bodyBytes: body.length });
  res.writeHead(200, { "content-type": "application/json" });
  res.end(text);
};

export class Upstream {
  readonly seen: SeenRequest[] = [];
  private constructor(
    readonly server: Server,
    readonly certificate: TestCertificate | undefined,
  ) {}

  static async start(options: {
    tls: boolean;
    names?: string[];
    host?: string;
    port?: number;
    handler?: Handler;
  }): Promise<Upstream> {
    const certificate = options.tls
      ? await makeServerCertificate(options.names ?? ["localhost"])
      : undefined;
    let upstream: Upstream | undefined;
    const listener = async (req: IncomingMessage, res: ServerResponse) => {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const body = Buffer.concat(chunks);
      upstream?.seen.push({
        method: req.method ?? "",
        url: req.url ?? "",
        headers: req.headers,
        body: body.toString("utf8"),
      });
      await (options.handler ?? echoHandler)(req, res, body);
    };
    const server = certificate
      ? createHttpsServer({ key: certificate.keyPem, cert: certificate.certPem }, listener)
      : createHttpServer(listener);
    upstream = new Upstream(server, certificate);
    await new Promise<void>((resolve) =>
      server.listen(options.port ?? 0, options.host ?? "127.0.0.1", resolve),
    );
    return upstream;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
