/**
 * The upstream the door benches send through: HTTPS on loopback, answering
 * every request with 1 KB (or the size asked for), its certificate from a CA
 * of its own (written to `caFile` for whoever must trust it), connections
 * kept alive for a minute.
 */
import { writeFileSync } from "node:fs";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { makeServerCertificate } from "./harness.ts";

export interface KbUpstream {
  server: Server;
  port: number;
  caFile: string;
  caPem: string;
}

export async function startKbUpstream(
  names: string[],
  dir: string,
  bytes = 1024,
): Promise<KbUpstream> {
  const certificate = await makeServerCertificate(names);
  const caFile = join(dir, "upstream-ca.pem");
  writeFileSync(caFile, certificate.caPem);
  const body = Buffer.alloc(bytes, 0x61);
  const server = createServer(
    { key: certificate.keyPem, cert: certificate.certPem },
    (_req, res) => {
      res.writeHead(200, { "content-length": body.length });
      res.end(body);
    },
  );
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((ready) => server.listen(0, "127.0.0.1", ready));
  return { server, port: (server.address() as AddressInfo).port, caFile, caPem: certificate.caPem };
}
