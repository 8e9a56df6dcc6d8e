import type Docker from "dockerode";
import { errorMessage, RosterError } from "../errors.ts";
import { LOCKED_NETWORK } from "./layout.ts";

/**
 * The network every box joins: a plain bridge (the host must stay reachable:
 * the gateway listens there) with IP masquerade off, so nothing a box sends
 * can be routed onward to the outside. The host firewall rule that narrows
 * the host itself to the gateway port is added by the runner.
 */
export interface LockedNetwork {
  name: string;
  /** Docker's id for it: its bridge on the host is br-<first 12 characters>. */
  id: string;
  subnet: string;
  /** The host's address on this network: where the gateway listens for boxes. */
  gateway: string;
}

export async function ensureLockedNetwork(
  docker: Docker,
  name: string = LOCKED_NETWORK,
): Promise<LockedNetwork> {
  let info: Awaited<ReturnType<Docker.Network["inspect"]>>;
  try {
    info = await docker.getNetwork(name).inspect();
  } catch (error) {
    if ((error as { statusCode?: unknown }).statusCode !== 404) throw error;
    try {
      await docker.createNetwork({
        Name: name,
        Driver: "bridge",
        CheckDuplicate: true,
        Options: { "com.docker.network.bridge.enable_ip_masquerade": "false" },
        Labels: { "org.roster.network": "locked" },
      });
    } catch (createError) {
      if ((createError as { statusCode?: unknown }).statusCode !== 409) {
        throw new RosterError(
          `could not create the locked network ${name}: ${errorMessage(createError)}`,
        );
      }
    }
    info = await docker.getNetwork(name).inspect();
  }
  const options: Record<string, string> = info.Options ?? {};
  if (options["com.docker.network.bridge.enable_ip_masquerade"] !== "false") {
    throw new RosterError(
      `network ${name} exists but routes to the outside (IP masquerade is on); remove it with \`docker network rm ${name}\` and roster will recreate it locked`,
    );
  }
  const config = (info.IPAM?.Config ?? []).find(
    (entry: { Subnet?: string }) => entry.Subnet && !entry.Subnet.includes(":"),
  ) as { Subnet?: string; Gateway?: string } | undefined;
  if (!config?.Subnet || !config.Gateway) {
    throw new RosterError(`network ${name} has no IPv4 subnet and gateway`);
  }
  return { name, id: info.Id, subnet: config.Subnet, gateway: config.Gateway };
}
