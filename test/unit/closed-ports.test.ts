import { networkInterfaces } from "node:os";
import { describe, expect, it } from "vitest";
import { ClosedPorts, consolePort } from "../../runner/boundary/gateway/upstream/closed-ports.ts";

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

describe("the metrics' port", () => {
  it("is closed as the console's is, where [telemetry] metrics_listen puts it", () => {
    const closed = ClosedPorts.forConfig({ telemetry: { metrics_listen: "0.0.0.0:9464" } });
    for (const host of ["127.0.0.1", "localhost", "host.docker.internal", "172.17.0.1"])
      expect(closed.reason(host, 9464), host).toMatch(/roster's metrics/);
    expect(closed.at(9464)?.("127.0.0.1")).toMatch(/roster's metrics/);
    expect(closed.reason("example.com", 9464)).toBeUndefined();
    expect(ClosedPorts.forConfig({}).reason("127.0.0.1", 9464)).toBeUndefined();
  });
});
