import { networkInterfaces } from "node:os";
import { describe, expect, it } from "vitest";
import { ClosedPorts, consolePort } from "../../runner/boundary/gateway/closed-ports.ts";

/** The console's port is closed on every name and address of this host, and only there. */
describe("closed host ports", () => {
  const closed = new ClosedPorts([7717]);
  const own =
    Object.values(networkInterfaces())
      .flat()
      .find((entry) => entry && !entry.internal)?.address ?? "127.0.0.1";

  it("closes the port on loopback, internal and own addresses and host names", () => {
    for (const host of [
      "127.0.0.1",
      "127.1.2.3",
      "[::1]",
      "::ffff:127.0.0.1",
      "localhost",
      "LOCALHOST.",
      "x.localhost",
      "host.docker.internal",
      "172.18.0.1",
      "10.1.2.3",
      own,
    ])
      expect(closed.reason(host, 7717), host).toMatch(/roster's console/);
  });

  it("leaves other ports and outside hosts alone", () => {
    expect(closed.reason("127.0.0.1", 7718)).toBeUndefined();
    expect(closed.reason("example.com", 7717)).toBeUndefined();
    expect(closed.reason("93.184.215.14", 7717)).toBeUndefined();
  });

  it("follows [console] listen", () => {
    expect(consolePort(undefined)).toBe(7717);
    expect(consolePort({ listen: "0.0.0.0:8080" })).toBe(8080);
    expect(consolePort({ listen: "[::1]:9000" })).toBe(9000);
  });
});
