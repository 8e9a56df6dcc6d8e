import { describe, expect, it } from "vitest";
import { hostNamesConsole } from "../../runner/services/console/origin.ts";

/**
 * The Host rule the console and the metrics listener share: their own
 * address and port, localhost on loopback, and never a name they were not
 * given (a rebound name). Here, a listener configured as `localhost`, which a
 * scraper may name by its loopback literal.
 */
describe("which Host names a listener", () => {
  it("takes a loopback literal for a listener named localhost, and no other name", () => {
    const place = { host: "localhost", port: 9464 };
    for (const host of ["localhost:9464", "127.0.0.1:9464", "[::1]:9464"])
      expect(hostNamesConsole(host, place), host).toBe(true);
    for (const host of ["rebound.example:9464", "127.0.0.1:9465", "localhost", "10.0.0.1:9464"])
      expect(hostNamesConsole(host, place), host).toBe(false);
  });
});
