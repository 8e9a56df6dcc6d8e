import { describe, expect, it } from "vitest";
import { grantNamesHost } from "../../runner/boundary/gateway/judging/judge.ts";
import { ClosedPorts } from "../../runner/boundary/gateway/upstream/closed-ports.ts";
import { hostName } from "../../runner/ground/config/host-name.ts";
import { hostMatches } from "../../runner/ground/config/host-pattern.ts";

/**
 * One form for a host wherever one is compared: a grant, the SSRF guard's
 * "named on purpose" and the closed ports all see `Example.COM.`, `[::1]` and
 * an internationalised name the way the request's host is seen.
 */
describe("host names", () => {
  it("are lower-cased, unbracketed, without a trailing dot, and in ASCII form", () => {
    expect(hostName(" Example.COM. ")).toBe("example.com");
    expect(hostName("[::1]")).toBe("::1");
    expect(hostName("Bücher.Example")).toBe("xn--bcher-kva.example");
    expect(hostName("xn--bcher-kva.example")).toBe("xn--bcher-kva.example");
  });

  it("match a grant however the request spells them", () => {
    expect(hostMatches("bücher.example", "XN--BCHER-KVA.example.")).toBe(true);
    expect(hostMatches("*.bücher.example", "shop.xn--bcher-kva.example")).toBe(true);
    expect(hostMatches("bücher.example", "bucher.example")).toBe(false);
  });

  it("lift the SSRF guard only for the host a grant names, in any spelling", () => {
    expect(grantNamesHost({ match: { host: "Intranet.Test." } }, "intranet.test")).toBe(true);
    expect(grantNamesHost({ match: { host: "[::1]" } }, "::1")).toBe(true);
    expect(grantNamesHost({ match: { host: "*.intranet.test" } }, "a.intranet.test")).toBe(false);
  });

  it("close the console's port to the host under any spelling", () => {
    const closed = new ClosedPorts([7400]);
    for (const host of ["LOCALHOST.", "[::1]", "127.0.0.1", "Host.Docker.Internal"]) {
      expect(closed.reason(host, 7400)).toContain("roster's console");
    }
  });
});
