/**
 * The floor under any proxy written in Node, for bench/gateway.ts: a TLS
 * relay in its own process that terminates the client's TLS and opens its
 * own to the upstream, copying bytes both ways: no HTTP parsing, no policy,
 * no audit. Whatever the gateway costs beyond this is roster's; this much is
 * Node's TLS and streams on this machine.
 */
import { spawn } from "node:child_process";

const RELAY = `
import { connect, createServer } from "node:tls";
const { RELAY_KEY: key, RELAY_CERT: cert, RELAY_CA: ca, RELAY_UPSTREAM_PORT: upstreamPort } = process.env;
const server = createServer({ key, cert }, (client) => {
  const upstream = connect({ host: "127.0.0.1", port: Number(upstreamPort), ca });
  client.pipe(upstream);
  upstream.pipe(client);
  client.on("error", () => upstream.destroy());
  upstream.on("error", () => client.destroy());
  client.on("close", () => upstream.destroy());
  upstream.on("close", () => client.destroy());
});
server.listen(0, "127.0.0.1", () => console.log(server.address().port));
`;

/** A floor relay running in a process of its own (this file's, or bench/http-relay.ts). */
export interface RelayProcess {
  port: number;
  pid: number | undefined;
  stop(): void;
}

export interface RelayOptions {
  keyPem: string;
  certPem: string;
  /** The CA the upstream's certificate is signed by. */
  caPem: string;
  upstreamPort: number;
}

export function startTlsRelay(options: RelayOptions): Promise<RelayProcess> {
  return startRelayProcess("the TLS relay", RELAY, options);
}

/** A relay's module source run in a Node process of its own, once it prints the port it listens on. */
export async function startRelayProcess(
  name: string,
  source: string,
  options: RelayOptions,
): Promise<RelayProcess> {
  const child = spawn(process.execPath, ["--input-type=module", "-e", source], {
    env: {
      ...process.env,
      RELAY_KEY: options.keyPem,
      RELAY_CERT: options.certPem,
      RELAY_CA: options.caPem,
      RELAY_UPSTREAM_PORT: String(options.upstreamPort),
    },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const port = await new Promise<number>((resolve, reject) => {
    child.once("error", reject);
    child.once("exit", (code) => reject(new Error(`${name} exited (${code})`)));
    child.stdout.once("data", (data: Buffer) => resolve(Number(String(data).trim())));
  });
  return { port, pid: child.pid, stop: () => child.kill("SIGTERM") };
}
