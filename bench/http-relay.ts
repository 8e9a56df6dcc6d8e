/**
 * A second floor under any proxy written in Node, for the door benches: an
 * HTTPS server in its own process that sends each request on with Node's
 * https client (a keep-alive pool) and relays the answer, as the door does,
 * but with nothing else: no judging, no credential, no audit line, no
 * metrics, no CONNECT. Beside bench/tls-relay.ts (TLS and bytes only), it
 * shows what Node's HTTP on the two sides costs on this machine; whatever the
 * door costs beyond this is roster's own work.
 */
import { type RelayOptions, type RelayProcess, startRelayProcess } from "./tls-relay.ts";

const RELAY = `
import { Agent, createServer, request } from "node:https";
const { RELAY_KEY: key, RELAY_CERT: cert, RELAY_CA: ca, RELAY_UPSTREAM_PORT: upstreamPort } = process.env;
const agent = new Agent({ keepAlive: true, maxFreeSockets: 256, ca });
const HOP = new Set(["connection", "keep-alive", "transfer-encoding", "upgrade", "host"]);
const server = createServer({ key, cert }, (req, res) => {
  const headers = {};
  for (const [name, value] of Object.entries(req.headers)) if (!HOP.has(name)) headers[name] = value;
  const out = request(
    { host: "127.0.0.1", port: Number(upstreamPort), method: req.method, path: req.url, headers, agent },
    (answer) => {
      const back = {};
      for (const [name, value] of Object.entries(answer.headers)) if (!HOP.has(name)) back[name] = value;
      res.writeHead(answer.statusCode ?? 502, back);
      answer.pipe(res);
    },
  );
  out.on("error", () => res.destroy());
  req.pipe(out);
});
server.keepAliveTimeout = 60_000;
server.listen(0, "127.0.0.1", () => console.log(server.address().port));
`;

export function startHttpRelay(options: RelayOptions): Promise<RelayProcess> {
  return startRelayProcess("the HTTP relay", RELAY, options);
}
