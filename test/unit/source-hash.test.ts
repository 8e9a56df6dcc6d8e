import { cp, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assembleContext } from "../../runner/boundary/box/build-context.ts";
import { sourceHash } from "../../runner/boundary/box/source-hash.ts";
import { PROJECT_ROOT } from "../../runner/ground/version.ts";

let dir: string;
let extensions: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "roster-source-"));
  extensions = join(dir, "extensions");
  await cp(join(PROJECT_ROOT, "extensions"), extensions, { recursive: true });
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe("the hash of what the box image is built from", () => {
  it("is stable, and changes when a tool is dropped in or a lib file edited", async () => {
    const before = await sourceHash({ extensionsDir: extensions });
    expect(await sourceHash({ extensionsDir: extensions })).toBe(before);
    // the same files wherever they sit
    expect(await sourceHash({})).toBe(before);

    await writeFile(join(extensions, "new_tool.ts"), "export default function () {}\n");
    const dropped = await sourceHash({ extensionsDir: extensions });
    expect(dropped).not.toBe(before);

    await writeFile(join(extensions, "lib", "helper.ts"), "export const x = 1;\n");
    expect(await sourceHash({ extensionsDir: extensions })).not.toBe(dropped);
    await rm(join(extensions, "lib", "helper.ts"));
    await rm(join(extensions, "new_tool.ts"));
    expect(await sourceHash({ extensionsDir: extensions })).toBe(before);
  });

  it("ignores node_modules and the host's build CA, as the build does", async () => {
    const before = await sourceHash({ extensionsDir: extensions });
    await mkdir(join(extensions, "node_modules", "x"), { recursive: true });
    await writeFile(join(extensions, "node_modules", "x", "index.js"), "1");
    await writeFile(join(dir, "ca.pem"), "A CA");
    expect(
      await sourceHash({
        extensionsDir: extensions,
        env: { ROSTER_BUILD_CA: join(dir, "ca.pem") },
      }),
    ).toBe(before);
    await rm(join(extensions, "node_modules"), { recursive: true });
  });

  it("follows ROSTER_EXTENSIONS_DIR, for the hash and the build alike, and refuses one that is no folder", async () => {
    await writeFile(join(extensions, "only_here.ts"), "export default function () {}\n");
    try {
      const env = { ROSTER_EXTENSIONS_DIR: extensions };
      expect(await sourceHash({ env })).toBe(await sourceHash({ extensionsDir: extensions }));
      const context = await assembleContext({ env });
      try {
        expect(context.extensions).toContain("only_here.ts");
      } finally {
        await rm(context.dir, { recursive: true, force: true });
      }
      await expect(
        sourceHash({ env: { ROSTER_EXTENSIONS_DIR: join(dir, "nope") } }),
      ).rejects.toThrow(`ROSTER_EXTENSIONS_DIR names ${join(dir, "nope")}, which is not a folder`);
    } finally {
      await rm(join(extensions, "only_here.ts"));
    }
  });

  it("takes a few milliseconds", async () => {
    const started = performance.now();
    for (let i = 0; i < 10; i++) await sourceHash({});
    const each = (performance.now() - started) / 10;
    expect(each).toBeLessThan(100);
  });
});
