import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  baseSourcesFile,
  debianSources,
  parseAptSources,
} from "../../runner/boundary/box/debian-sources.ts";

const roots: string[] = [];
async function hostRoot(files: Record<string, string>): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), "roster-apt-"));
  roots.push(root);
  await mkdir(join(root, "etc/apt/sources.list.d"), { recursive: true });
  for (const [path, text] of Object.entries(files)) await writeFile(join(root, path), text);
  return root;
}
afterEach(async () => {
  for (const root of roots.splice(0)) await rm(root, { recursive: true, force: true });
});

describe("the Debian mirror for the offline base", () => {
  it("reads deb822 sources the way a bookworm host lists them", async () => {
    const root = await hostRoot({
      "etc/apt/sources.list.d/debian.sources": [
        "Types: deb",
        "URIs: http://mirror.example/debian",
        "Suites: bookworm bookworm-updates",
        "Components: main",
        "",
        "Types: deb",
        "URIs: http://mirror.example/debian-security",
        "Suites: bookworm-security",
        "Components: main",
      ].join("\n"),
    });
    expect(debianSources({}, root)).toEqual({
      mirror: "http://mirror.example/debian",
      security: "http://mirror.example/debian-security",
    });
  });

  it("reads one-line sources, skipping comments and deb-src", () => {
    const entries = parseAptSources(
      "# a comment\ndeb-src http://src.example/debian bookworm main\ndeb [arch=amd64] http://one.example/debian bookworm main\n",
    );
    expect(entries).toEqual([{ uri: "http://one.example/debian", suites: ["bookworm"] }]);
  });

  it("lets ROSTER_DEBIAN_MIRROR override the host's mirror", async () => {
    const root = await hostRoot({
      "etc/apt/sources.list": "deb http://host.example/debian bookworm main\n",
    });
    expect(
      debianSources({ ROSTER_DEBIAN_MIRROR: "http://other.example/debian" }, root)?.mirror,
    ).toBe("http://other.example/debian");
  });

  it("finds nothing on a host without bookworm sources", async () => {
    const root = await hostRoot({
      "etc/apt/sources.list": "deb http://x.example/ubuntu noble main\n",
    });
    expect(debianSources({}, root)).toBeUndefined();
  });

  it("writes main, updates and security into the base", () => {
    const text = baseSourcesFile({
      mirror: "http://m.example/debian",
      security: "http://s.example/sec",
    });
    expect(text).toContain("Suites: bookworm bookworm-updates");
    expect(text).toContain("URIs: http://s.example/sec\nSuites: bookworm-security");
  });
});
