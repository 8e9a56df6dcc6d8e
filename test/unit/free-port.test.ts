import { readFileSync } from "node:fs";
import { createServer } from "node:net";
import { describe, expect, it } from "vitest";
import { freePort } from "../support/roster-root.ts";

/**
 * The ports tests give their servers come from below the kernel's ephemeral
 * range: one from inside it could become an outgoing connection's source port
 * before the server binds it (then the server never starts, a rare failure).
 */
describe("freePort", () => {
  it("gives distinct ports below the ephemeral range that a server can then listen on", async () => {
    const ephemeral = Number(
      readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").split(/\s+/)[0],
    );
    const ports = await Promise.all(Array.from({ length: 20 }, () => freePort()));
    expect(new Set(ports).size).toBe(ports.length);
    for (const port of ports) {
      expect(port).toBeGreaterThanOrEqual(1_024);
      expect(port).toBeLessThan(ephemeral);
    }
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(ports[0], "127.0.0.1", () => resolve());
    });
    await new Promise((resolve) => server.close(resolve));
  });
});
