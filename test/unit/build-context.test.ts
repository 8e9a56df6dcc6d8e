import { readFileSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assembleContext, hostExtraCa } from "../../runner/boundary/box/build-context.ts";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "roster-ca-"));
  await writeFile(join(dir, "explicit.pem"), "EXPLICIT");
  await writeFile(join(dir, "node.pem"), "NODE");
  await writeFile(join(dir, "system.pem"), "SYSTEM");
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe("the CA a box build trusts while fetching", () => {
  it("prefers ROSTER_BUILD_CA, then NODE_EXTRA_CA_CERTS, then the system bundle", () => {
    const system = join(dir, "system.pem");
    expect(
      hostExtraCa(
        { ROSTER_BUILD_CA: join(dir, "explicit.pem"), NODE_EXTRA_CA_CERTS: join(dir, "node.pem") },
        system,
      ),
    ).toBe("EXPLICIT");
    expect(hostExtraCa({ NODE_EXTRA_CA_CERTS: join(dir, "node.pem") }, system)).toBe("NODE");
    expect(hostExtraCa({ NODE_EXTRA_CA_CERTS: join(dir, "missing.pem") }, system)).toBe("SYSTEM");
    expect(hostExtraCa({}, join(dir, "none.pem"))).toBe("");
  });

  it("assembles only what the Dockerfile names, with the CA beside it", async () => {
    const context = await assembleContext({ env: { ROSTER_BUILD_CA: join(dir, "explicit.pem") } });
    try {
      expect(context.files).toEqual(
        expect.arrayContaining([
          "Dockerfile",
          "roster-lock",
          "roster-busy",
          "engine/package.json",
          "engine/package-lock.json",
          "engine/run-pi",
          "engine/handoff.ts",
          "engine/roster-mcp.ts",
          "engine/run-roster-mcp",
          "build-ca/extra.crt",
          "extensions/web.ts",
        ]),
      );
      expect(
        context.files.some((file) => file.includes("node_modules") || file.startsWith("runner/")),
      ).toBe(false);
      expect(readFileSync(join(context.dir, "build-ca/extra.crt"), "utf8")).toBe("EXPLICIT");
      expect(context.extensions).toContain("web.ts");
    } finally {
      await rm(context.dir, { recursive: true, force: true });
    }
  });
});
