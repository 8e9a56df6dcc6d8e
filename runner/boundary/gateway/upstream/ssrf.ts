import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import { BlockList, isIP } from "node:net";
import { hostName } from "../../../ground/config/host-name.ts";

/**
 * No SSRF through the door: the gateway resolves names itself and refuses to
 * connect to loopback, private, link-local, CGNAT, multicast, reserved and
 * cloud-metadata addresses unless the deciding grant names that exact host.
 * The check runs inside the connect path's own lookup, so the address checked
 * is the address connected to — no rebinding between check and connect.
 */
const blocked = new BlockList();
const RANGES: Array<[string, number, "ipv4" | "ipv6", string]> = [
  ["0.0.0.0", 8, "ipv4", "unspecified"],
  ["10.0.0.0", 8, "ipv4", "private"],
  ["100.64.0.0", 10, "ipv4", "CGNAT"],
  ["127.0.0.0", 8, "ipv4", "loopback"],
  ["169.254.0.0", 16, "ipv4", "link-local or cloud metadata"],
  ["172.16.0.0", 12, "ipv4", "private"],
  ["192.0.0.0", 24, "ipv4", "reserved"],
  ["192.168.0.0", 16, "ipv4", "private"],
  ["198.18.0.0", 15, "ipv4", "reserved"],
  ["224.0.0.0", 4, "ipv4", "multicast"],
  ["240.0.0.0", 4, "ipv4", "reserved"],
  ["::", 128, "ipv6", "unspecified"],
  ["::1", 128, "ipv6", "loopback"],
  ["fc00::", 7, "ipv6", "private (ULA)"],
  ["fe80::", 10, "ipv6", "link-local"],
  ["ff00::", 8, "ipv6", "multicast"],
  ["fd00:ec2::254", 128, "ipv6", "cloud metadata"],
];
const labelled: Array<{ list: BlockList; label: string }> = [];
for (const [address, prefix, family, label] of RANGES) {
  blocked.addSubnet(address, prefix, family);
  const one = new BlockList();
  one.addSubnet(address, prefix, family);
  labelled.push({ list: one, label });
}

/** Why an address may not be reached without an exact grant, or undefined if it may. */
export function addressProblem(address: string): string | undefined {
  let target = address;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(target);
  if (mapped?.[1]) target = mapped[1];
  const family = isIP(target) === 6 ? "ipv6" : "ipv4";
  if (!blocked.check(target, family)) return undefined;
  return labelled.find((entry) => entry.list.check(target, family))?.label ?? "internal";
}

/** How an SSRF refusal's message ends: an audit line whose note has it was allowed by its rule first. */
export const SSRF_REFUSED = "only a grant naming exactly this host may reach it";

export class SsrfRefusal extends Error {
  readonly code = "ROSTER_SSRF";
  /** The refusal's error line, and the rule it is audited under (the deciding grant's when unset). */
  readonly title: string = "denied by gateway (internal address)";
  readonly rule: string | undefined = undefined;
  constructor(
    readonly host: string,
    readonly address: string,
    readonly reason: string,
    message = `${host} resolves to ${address} (${reason}); ${SSRF_REFUSED}`,
  ) {
    super(message);
  }
}

/**
 * A name that resolved to this host on a port of roster's own (closed-ports.ts):
 * refused whatever the grants say, even one naming the host exactly.
 */
export class ClosedPortRefusal extends SsrfRefusal {
  override readonly title = "denied by gateway (a host service no box may reach)";
  override readonly rule = "closed";
  constructor(host: string, address: string, why: string) {
    super(host, address, "closed", `${host} resolves to ${address} (this host): ${why}`);
  }
}

type LookupCallback = (
  error: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

/**
 * A `lookup` for net/tls connect options: static answers first (operator's
 * `[gateway] resolve`), then DNS; refuses internal addresses unless allowed,
 * and, when the connection's port is one of roster's own (`closedAt`, from
 * ClosedPorts.at), any address of this host, allowed or not.
 */
export function guardedLookup(
  staticAnswers: Record<string, string>,
  allowInternal: boolean,
  closedAt?: (address: string) => string | undefined,
) {
  return (hostname: string, options: { all?: boolean }, callback: LookupCallback): void => {
    const finish = (address: string) => {
      const closed = closedAt?.(address);
      if (closed) {
        const refusal = new ClosedPortRefusal(hostname, address, closed);
        callback(refusal as NodeJS.ErrnoException, "", 0);
        return;
      }
      const problem = allowInternal ? undefined : addressProblem(address);
      if (problem) {
        callback(new SsrfRefusal(hostname, address, problem) as NodeJS.ErrnoException, "", 0);
        return;
      }
      const family = isIP(address);
      if (options.all) callback(null, [{ address, family }]);
      else callback(null, address, family);
    };
    const name = hostName(hostname);
    const fixed = staticAnswers[name];
    if (fixed) {
      finish(fixed);
      return;
    }
    if (isIP(name)) {
      finish(name);
      return;
    }
    dnsLookup(name, { all: false }, (error, address) => {
      if (error) callback(error, "", 0);
      else finish(address);
    });
  };
}

/** Finds an SsrfRefusal anywhere in an error's cause chain (undici wraps connect errors). */
export function findSsrfRefusal(error: unknown): SsrfRefusal | undefined {
  let current: unknown = error;
  for (let depth = 0; current && depth < 6; depth++) {
    if (current instanceof SsrfRefusal) return current;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

/**
 * Connecting to an IP literal skips `lookup` entirely, so literals are checked
 * here, before any connection is attempted.
 */
export function literalRefusal(host: string, allowInternal: boolean): SsrfRefusal | undefined {
  const bare = host.replace(/^\[|\]$/g, "");
  if (allowInternal || !isIP(bare)) return undefined;
  const problem = addressProblem(bare);
  return problem ? new SsrfRefusal(host, bare, problem) : undefined;
}
