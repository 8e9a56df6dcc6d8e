import { RosterError } from "../errors.ts";
import { runCommand } from "./run-command.ts";

/**
 * The host firewall rules that make the gateway the only door: packets from
 * the locked network to the host are accepted only on the gateway's port,
 * and nothing from it is forwarded anywhere: not beyond the host, not to
 * another box. Masquerade off alone is not enough: a packet still leaves with
 * the box's own address, and any network that routes that address back to
 * this host (a VPN, a peer that uses the host as its gateway) would answer it;
 * a one-way datagram needs no answer at all.
 */
export const CHAIN = "ROSTER-LOCKED";

async function iptables(args: string[], tailLines = 20): Promise<{ code: number; output: string }> {
  const result = await runCommand("iptables", ["-w", ...args], { tailLines });
  return { code: result.code, output: result.tail.join("\n") };
}

/**
 * One change at a time in this process: two boxes provisioned at once (the
 * server runs several) would otherwise interleave flush and append and could
 * leave DROP ahead of ACCEPT. A chain that already says exactly this is left
 * alone, so boxes already running never see it flushed.
 */
let queue: Promise<void> = Promise.resolve();

export function ensureEgressLockdown(subnet: string, gatewayPort: number): Promise<void> {
  const next = queue.then(() => applyLockdown(subnet, gatewayPort));
  queue = next.catch(() => undefined);
  return next;
}

async function applyLockdown(subnet: string, gatewayPort: number): Promise<void> {
  const fail = (step: string, output: string) =>
    new RosterError(
      `could not install the host firewall rule (${step}: ${output.split("\n")[0] || "iptables failed"}); roster needs root and iptables, or set [box] egress_lockdown = false in org.toml`,
      { exitCode: 2 },
    );
  // the common case, every rule already in place, costs one iptables call
  const listing = await iptables(["-S"], 100_000);
  if (listing.code === 0 && inPlace(listing.output, subnet, gatewayPort)) return;
  const jump = ["INPUT", "-s", subnet, "-j", CHAIN];
  const current = await iptables(["-S", CHAIN]);
  const wanted = [
    `-N ${CHAIN}`,
    `-A ${CHAIN} -p tcp -m tcp --dport ${gatewayPort} -j ACCEPT`,
    `-A ${CHAIN} -j DROP`,
  ];
  const hooked = (await iptables(["-C", ...jump])).code === 0;
  if (current.code === 0 && hooked && current.output.trim() === wanted.join("\n"))
    return dropForwarding(subnet, fail);
  if (current.code !== 0) {
    const created = await iptables(["-N", CHAIN]);
    if (created.code !== 0 && !created.output.includes("already exists"))
      throw fail("create chain", created.output);
  }
  const flushed = await iptables(["-F", CHAIN]);
  if (flushed.code !== 0) throw fail("flush chain", flushed.output);
  for (const rule of [
    ["-A", CHAIN, "-p", "tcp", "--dport", String(gatewayPort), "-j", "ACCEPT"],
    ["-A", CHAIN, "-j", "DROP"],
  ]) {
    const added = await iptables(rule);
    if (added.code !== 0) throw fail("add rule", added.output);
  }
  if (!hooked) {
    const inserted = await iptables(["-I", ...jump]);
    if (inserted.code !== 0) throw fail("hook INPUT", inserted.output);
  }
  await dropForwarding(subnet, fail);
}

/**
 * Whether the filter table (as `iptables -S` prints it) already holds the
 * lockdown exactly: the chain with only its two rules, in order; INPUT
 * jumping to it for the subnet; and forwarding dropped for the subnet where
 * dropForwarding would put it. Anything else, even a harmless difference, is
 * left to the full path, which repairs it.
 */
export function inPlace(listing: string, subnet: string, gatewayPort: number): boolean {
  const lines = listing.split("\n").map((line) => line.trim());
  const chain = lines.filter((line) => line.startsWith(`-A ${CHAIN} `));
  const forwardChain = lines.includes("-N DOCKER-USER") ? "DOCKER-USER" : "FORWARD";
  return (
    lines.includes(`-N ${CHAIN}`) &&
    chain.length === 2 &&
    chain[0] === `-A ${CHAIN} -p tcp -m tcp --dport ${gatewayPort} -j ACCEPT` &&
    chain[1] === `-A ${CHAIN} -j DROP` &&
    lines.includes(`-A INPUT -s ${subnet} -j ${CHAIN}`) &&
    lines.includes(`-A ${forwardChain} -s ${subnet} -j DROP`)
  );
}

/**
 * Nothing from the locked network is forwarded. Docker keeps its users' own
 * forwarding rules in DOCKER-USER (evaluated first, never flushed by it);
 * without that chain the rule goes at the top of FORWARD.
 */
async function dropForwarding(
  subnet: string,
  fail: (step: string, output: string) => RosterError,
): Promise<void> {
  const chain = (await iptables(["-S", "DOCKER-USER"])).code === 0 ? "DOCKER-USER" : "FORWARD";
  const rule = [chain, "-s", subnet, "-j", "DROP"];
  if ((await iptables(["-C", ...rule])).code === 0) return;
  const inserted = await iptables(["-I", ...rule]);
  if (inserted.code !== 0) throw fail(`hook ${chain}`, inserted.output);
}
