import { RosterError } from "../errors.ts";
import { runCommand } from "./run-command.ts";

/**
 * The host firewall rule that makes the gateway the only door: packets from
 * the locked network to the host are accepted only on the gateway's port;
 * everything else is dropped. (The network itself has IP masquerade off, so
 * nothing routes beyond the host.)
 */
export const CHAIN = "ROSTER-LOCKED";

async function iptables(args: string[]): Promise<{ code: number; output: string }> {
  const result = await runCommand("iptables", ["-w", ...args]);
  return { code: result.code, output: result.tail.join("\n") };
}

export async function ensureEgressLockdown(subnet: string, gatewayPort: number): Promise<void> {
  const fail = (step: string, output: string) =>
    new RosterError(
      `could not install the host firewall rule (${step}: ${output.split("\n")[0] || "iptables failed"}); roster needs root and iptables, or set [box] egress_lockdown = false in org.toml`,
      { exitCode: 2 },
    );
  if ((await iptables(["-S", CHAIN])).code !== 0) {
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
  const jump = ["INPUT", "-s", subnet, "-j", CHAIN];
  if ((await iptables(["-C", ...jump])).code !== 0) {
    const inserted = await iptables(["-I", ...jump]);
    if (inserted.code !== 0) throw fail("hook INPUT", inserted.output);
  }
}
