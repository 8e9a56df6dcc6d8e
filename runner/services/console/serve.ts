import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { getRequestListener } from "@hono/node-server";
import type { ListenAddress } from "../../boundary/gateway/process/gateway.ts";
import type { RosterPaths } from "../../ground/config/paths.ts";
import type { Session } from "../../work/sessions/session.ts";
import { consoleApp } from "./app.ts";
import { ConsoleFeed } from "./feed.ts";
import { consoleKey } from "./key.ts";

/**
 * The web console `roster server start` serves (see app.ts for the pages and
 * their guards). Loopback by default. A peer that opens a connection and
 * never finishes its request is dropped; an open page's event stream is the
 * only long-lived response, and it ends when either side does.
 */
export { DEFAULT_CONSOLE_LISTEN } from "../../boundary/gateway/upstream/closed-ports.ts";

export interface RunningConsole {
  url: string;
  /** The link that logs a browser in (carries the install's key). */
  loginUrl: string;
  port: number;
  host: string;
  close(): Promise<void>;
}

export async function startConsole(options: {
  paths: RosterPaths;
  listen: ListenAddress;
  workers: () => string[];
  sessions: () => Promise<Session[]>;
  /** How long a peer may take to send a whole request (default 10 s). */
  requestTimeoutMs?: number;
}): Promise<RunningConsole> {
  const { host, port: wanted } = options.listen;
  const key = consoleKey(options.paths);
  const feed = new ConsoleFeed(options.paths, options.workers);
  feed.start();
  // the port is known once the server listens (0 asks for any); no request is served before
  const place = { host, port: wanted };
  const app = consoleApp({
    paths: options.paths,
    key,
    feed,
    sessions: options.sessions,
    place: () => place,
  });
  const timeoutMs = options.requestTimeoutMs ?? 10_000;
  // the stalled-request sweep runs often enough for the timeout to mean something
  const server = createServer(
    { connectionsCheckingInterval: Math.min(1000, timeoutMs) },
    getRequestListener(app.fetch),
  );
  server.headersTimeout = timeoutMs;
  server.requestTimeout = timeoutMs;
  // open pages hold their event stream; everything else is short
  server.keepAliveTimeout = 5_000;
  server.maxConnections = 256;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(wanted, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  place.port = port;
  const shown = host.includes(":") ? `[${host}]` : host === "0.0.0.0" ? "127.0.0.1" : host;
  const url = `http://${shown}:${port}`;
  return {
    url,
    loginUrl: `${url}/login?key=${key.key}`,
    port,
    host,
    close: async () => {
      feed.close();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
    },
  };
}
