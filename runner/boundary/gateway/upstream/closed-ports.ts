import { BlockList, isIP } from "node:net";
import { networkInterfaces } from "node:os";
import { hostName } from "../../../ground/config/host-name.ts";
import { DEFAULT_GATEWAY_PORT } from "../settings/defaults.ts";
import { addressProblem } from "./ssrf.ts";

/**
 * Host services no box may reach whatever a grant says: the web console
 * (where gates are approved), the server's /metrics (`[telemetry]
 * metrics_listen`: the deployment's numbers), the webhook listener (`[webhooks]
 * listen`: a box must not file tasks, nor try secrets) and the gateway itself (its door control closes
 * other runs' doors; its health check names the host's config). A
 * destination is closed when its port is one of these services' and it is
 * this machine. That is judged twice: by name before any grant (loopback,
 * any internal literal, one of the host's own interface addresses, or a name
 * that always means the host: localhost, host.docker.internal), and by the
 * address a name resolves to, inside the connect path's own lookup — so a
 * grant's `resolve = { "svc.internal" = "127.0.0.1" }` can't lead a box to
 * these ports under another name.
 */
/** Where the console listens by default; `[console] listen` moves it. */
export const DEFAULT_CONSOLE_LISTEN = "127.0.0.1:7717";

/** The port of a HOST:PORT, or undefined when it has none. */
function portOf(listen: string): number | undefined {
  const port = Number(/:(\d{1,5})$/.exec(listen)?.[1]);
  return Number.isInteger(port) && port > 0 && port <= 65535 ? port : undefined;
}

/** The console's port as configured (its default when unset). */
export function consolePort(section: { listen?: string } | undefined): number {
  return portOf(section?.listen ?? DEFAULT_CONSOLE_LISTEN) ?? 7717;
}

/** The parts of org.toml that say where roster's own services listen. */
export interface ServicePlaces {
  console?: { listen?: string } | undefined;
  gateway?: { port?: number | undefined; listen?: string[] | undefined } | undefined;
  telemetry?: { metrics_listen?: string | undefined } | undefined;
  /** Served only when a `[[webhook]]` is set, on `[webhooks] listen` or its default. */
  webhook?: unknown[] | undefined;
  webhooks?: { listen?: string | undefined } | undefined;
}

/** Where the webhook listener binds unless `[webhooks] listen` says (ground/config/webhook-schema.ts). */
const DEFAULT_WEBHOOK_PORT = 7719;

type Service = "console" | "gateway" | "metrics" | "webhooks";

const WHAT: Record<Service, string> = {
  console: "roster's console",
  gateway: "roster's gateway (its door control and health check)",
  metrics: "roster's metrics",
  webhooks: "roster's webhook listener",
};

const HOST_NAMES = new Set(["localhost", "host.docker.internal", "gateway.docker.internal"]);

/** Loopback and the unspecified addresses, which Linux connects to the host itself. */
const THIS_HOST = new BlockList();
THIS_HOST.addSubnet("127.0.0.0", 8, "ipv4");
THIS_HOST.addSubnet("0.0.0.0", 8, "ipv4");
THIS_HOST.addAddress("::1", "ipv6");
THIS_HOST.addAddress("::", "ipv6");

/**
 * An address that reaches a listener on this machine: loopback, unspecified,
 * or one of the host's own interface addresses (bridges included, read each
 * time: they come and go). BlockList compares any spelling, IPv4 mapped into
 * IPv6 included.
 */
export function isHostAddress(address: string): boolean {
  const bare = hostName(address);
  const family = isIP(bare);
  if (family === 0) return false;
  const type = family === 6 ? "ipv6" : "ipv4";
  if (THIS_HOST.check(bare, type)) return true;
  const own = new BlockList();
  for (const list of Object.values(networkInterfaces()))
    for (const entry of list ?? [])
      own.addAddress(entry.address.replace(/%.*$/, ""), entry.family === "IPv6" ? "ipv6" : "ipv4");
  return own.check(bare, type);
}

export class ClosedPorts {
  private readonly ports = new Map<number, Service>();

  /** `consolePorts`: the console's (and any other host service's, closed the same way). */
  constructor(consolePorts: number[], gatewayPorts: number[] = [], metricsPorts: number[] = []) {
    for (const port of gatewayPorts) this.ports.set(port, "gateway");
    for (const port of metricsPorts) this.ports.set(port, "metrics");
    for (const port of consolePorts) this.ports.set(port, "console");
  }

  /** The ports org.toml gives the console, the metrics and the gateway. */
  static forConfig(places: ServicePlaces, extra: number[] = []): ClosedPorts {
    const gateway = [places.gateway?.port ?? DEFAULT_GATEWAY_PORT];
    for (const listen of places.gateway?.listen ?? []) {
      const port = portOf(listen);
      if (port) gateway.push(port);
    }
    const metrics = portOf(places.telemetry?.metrics_listen ?? "");
    const closed = new ClosedPorts(
      [consolePort(places.console), ...extra],
      gateway,
      metrics ? [metrics] : [],
    );
    if (places.webhook?.length) {
      const port = portOf(places.webhooks?.listen ?? "") ?? DEFAULT_WEBHOOK_PORT;
      if (!closed.ports.has(port)) closed.ports.set(port, "webhooks");
    }
    return closed;
  }

  /** A port the gateway turned out to listen on (port 0 is chosen at bind). */
  closeGatewayPort(port: number): void {
    if (!this.ports.has(port)) this.ports.set(port, "gateway");
  }

  private sentence(port: number, service: Service): string {
    return `port ${port} on this host is ${WHAT[service]}: no box may reach it, whatever the grants say`;
  }

  /**
   * Why this destination, as named, is closed, or undefined when it is not.
   * The host's own addresses are read each time (bridges come and go); that
   * happens only for the closed ports themselves.
   */
  reason(host: string, port: number): string | undefined {
    const service = this.ports.get(port);
    if (!service) return undefined;
    const name = hostName(host);
    const onHost =
      HOST_NAMES.has(name) ||
      name.endsWith(".localhost") ||
      (isIP(name) !== 0 && (addressProblem(name) !== undefined || isHostAddress(name)));
    return onHost ? this.sentence(port, service) : undefined;
  }

  /**
   * The check a connection to `port` makes on the address its name resolved
   * to (see ssrf.ts guardedLookup); undefined when the port is not closed,
   * so connections elsewhere pay nothing.
   */
  at(port: number): ((address: string) => string | undefined) | undefined {
    const service = this.ports.get(port);
    if (!service) return undefined;
    return (address) => (isHostAddress(address) ? this.sentence(port, service) : undefined);
  }
}
