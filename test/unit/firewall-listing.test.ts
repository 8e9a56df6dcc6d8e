import { describe, expect, it } from "vitest";
import { CHAIN, inPlace } from "../../runner/box/firewall.ts";

/**
 * The firewall's one-call check: a listing that holds the whole lockdown is
 * taken as it is; any difference sends provisioning down the path that
 * repairs it (and so must never be taken for "in place").
 */
const SUBNET = "172.18.0.0/16";
const whole = [
  "-P INPUT ACCEPT",
  "-P FORWARD DROP",
  "-N DOCKER",
  "-N DOCKER-USER",
  `-N ${CHAIN}`,
  `-A INPUT -s ${SUBNET} -j ${CHAIN}`,
  "-A FORWARD -j DOCKER-USER",
  `-A DOCKER-USER -s ${SUBNET} -j DROP`,
  "-A DOCKER-USER -j RETURN",
  `-A ${CHAIN} -p tcp -m tcp --dport 7300 -j ACCEPT`,
  `-A ${CHAIN} -j DROP`,
];
const without = (line: string) => whole.filter((entry) => entry !== line).join("\n");

describe("the lockdown as iptables lists it", () => {
  it("is in place when every rule is there", () => {
    expect(inPlace(whole.join("\n"), SUBNET, 7300)).toBe(true);
  });

  it("is not when a rule is missing, differs or is added to", () => {
    expect(inPlace(without(`-A DOCKER-USER -s ${SUBNET} -j DROP`), SUBNET, 7300)).toBe(false);
    expect(inPlace(without(`-A INPUT -s ${SUBNET} -j ${CHAIN}`), SUBNET, 7300)).toBe(false);
    expect(inPlace(without(`-A ${CHAIN} -j DROP`), SUBNET, 7300)).toBe(false);
    expect(inPlace(without(`-N ${CHAIN}`), SUBNET, 7300)).toBe(false);
    expect(inPlace(whole.join("\n"), SUBNET, 7301)).toBe(false);
    expect(inPlace(whole.join("\n"), "172.19.0.0/16", 7300)).toBe(false);
    const opened = [...whole, `-A ${CHAIN} -p tcp -m tcp --dport 22 -j ACCEPT`];
    expect(inPlace(opened.join("\n"), SUBNET, 7300)).toBe(false);
    const reordered = whole.map((line) =>
      line.includes("--dport")
        ? `-A ${CHAIN} -j DROP`
        : line.endsWith(`${CHAIN} -j DROP`)
          ? line.replace("-j DROP", "-p tcp -m tcp --dport 7300 -j ACCEPT")
          : line,
    );
    expect(inPlace(reordered.join("\n"), SUBNET, 7300)).toBe(false);
  });

  it("looks for the forwarding drop in FORWARD when Docker has no DOCKER-USER chain", () => {
    const bare = whole
      .filter((line) => !line.includes("DOCKER-USER"))
      .concat(`-A FORWARD -s ${SUBNET} -j DROP`);
    expect(inPlace(bare.join("\n"), SUBNET, 7300)).toBe(true);
    expect(
      inPlace(bare.filter((line) => !line.startsWith("-A FORWARD -s")).join("\n"), SUBNET, 7300),
    ).toBe(false);
  });
});
