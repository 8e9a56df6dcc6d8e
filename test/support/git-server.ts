/**
 * A real git smart-HTTP server for tests: `git http-backend` (the CGI that
 * ships with git) behind an HTTPS server, serving bare repositories from a
 * folder. Clients clone from it through the gateway like from any forge.
 */
import { spawn } from "node:child_process";
import type { IncomingMessage, ServerResponse } from "node:http";
import { Upstream } from "./upstream.ts";

export async function startGitServer(projectRoot: string, names: string[]): Promise<Upstream> {
  return Upstream.start({
    tls: true,
    names,
    handler: (req: IncomingMessage, res: ServerResponse, body: Buffer) =>
      new Promise<void>((resolve) => {
        const url = new URL(req.url ?? "/", "https://git.invalid");
        const cgi = spawn("git", ["http-backend"], {
          env: {
            PATH: process.env.PATH ?? "/usr/bin:/bin",
            GIT_PROJECT_ROOT: projectRoot,
            GIT_HTTP_EXPORT_ALL: "1",
            REQUEST_METHOD: req.method ?? "GET",
            PATH_INFO: decodeURIComponent(url.pathname),
            QUERY_STRING: url.search.slice(1),
            CONTENT_TYPE: req.headers["content-type"] ?? "",
            CONTENT_LENGTH: String(body.length),
            REMOTE_ADDR: "127.0.0.1",
          },
        });
        const out: Buffer[] = [];
        cgi.stdout.on("data", (chunk: Buffer) => out.push(chunk));
        cgi.on("close", () => {
          const raw = Buffer.concat(out);
          const split = raw.indexOf("\r\n\r\n");
          const head = raw.subarray(0, split).toString("latin1");
          const headers: Record<string, string> = {};
          let status = 200;
          for (const line of head.split("\r\n")) {
            const colon = line.indexOf(":");
            const name = line.slice(0, colon).trim().toLowerCase();
            const value = line.slice(colon + 1).trim();
            if (name === "status") status = Number(value.split(" ")[0]);
            else if (name) headers[name] = value;
          }
          res.writeHead(status, headers);
          res.end(raw.subarray(split + 4));
          resolve();
        });
        cgi.stdin.end(body);
      }),
  });
}
