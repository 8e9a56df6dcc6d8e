import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { PROJECT_ROOT } from "../../runner/ground/version.ts";

type Manifest = { dependencies?: Record<string, string>; devDependencies?: Record<string, string> };
const read = (path: string) =>
  JSON.parse(readFileSync(join(PROJECT_ROOT, path), "utf8")) as Manifest;

describe("engine pins", () => {
  it("type-checks and tests extensions against the versions the box bakes", () => {
    const engine = read("engine/package.json").dependencies ?? {};
    const root = { ...read("package.json").dependencies, ...read("package.json").devDependencies };
    expect(engine["@earendil-works/pi-coding-agent"]).toBe("1.6.0");
    for (const [name, version] of Object.entries(engine)) {
      expect(root[name]?.replace(/^\^/, ""), `root pin of ${name}`).toBe(version);
    }
  });

  it("keeps host-only dependencies out of the image", () => {
    const engine = Object.keys(read("engine/package.json").dependencies ?? {});
    for (const hostOnly of ["dockerode", "smol-toml", "commander", "tsx"]) {
      expect(engine).not.toContain(hostOnly);
    }
  });
});
