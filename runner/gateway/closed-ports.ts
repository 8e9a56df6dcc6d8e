import { isIP } from "node:net";
import { networkInterfaces } from "node:os";
import { hostName } from "../config/host-name.ts";
import { addressProblem } from "./ssrf.ts";

/**
 * Host services no box may reach whatever a grant says: the web console
 * (where gates are approved) above all. A destination is closed when its
 * port is one of these services' and its host is this machine — loopback,
 * any internal address, one of the host's own interface addresses, or a
 * name that always means the host (localhost, host.docker.internal). Checked
 * before any grant, for every worker, on intercepted requests and tunnels.
 */
/** Where the console listens by default; `[console] listen` moves it. */
export const DEFAULT_CONSOLE_LISTEN = "127.0.0.1:7717";

/** The console's port as configured (its default when unset). */
export function consolePort(section: { listen?: string } | undefined): number {
  const port = Number(/:(\d{1,5})$/.exec(section?.listen ?? DEFAULT_CONSOLE_LISTEN)?.[1]);
  return Number.isInteger(port) && port > 0 ? port : 7717;
}

const HOST_NAMES = new Set(["localhost", "host.docker.internal", "gateway.docker.internal"]);

function ownAddresses(): Set<string> {
  const own = new Set<string>();
  for (const list of Object.values(networkInterfaces()))
    for (const entry of list ?? []) own.add(hostName(entry.address));
  return own;
}

export class ClosedPorts {
  private readonly ports: Set<number>;

  constructor(ports: number[]) {
    this.ports = new Set(ports);
  }

  /**
   * Why this destination is closed, or undefined when it is not. The host's
   * own addresses are read each time (bridges come and go); that happens only
   * for the closed ports themselves.
   */
  reason(host: string, port: number): string | undefined {
    if (!this.ports.has(port)) return undefined;
    const name = hostName(host);
    const onHost =
      HOST_NAMES.has(name) ||
      name.endsWith(".localhost") ||
      (isIP(name) !== 0 && (addressProblem(name) !== undefined || ownAddresses().has(name)));
    return onHost
      ? `port ${port} on this host is roster's console: no box may reach it, whatever the grants say`
      : undefined;
  }
}
