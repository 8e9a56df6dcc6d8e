import { describe, expect, it } from "vitest";
import {
  blamedPackage,
  toolchainDockerfile,
  toolchainTag,
} from "../../runner/boundary/box/toolchain-image.ts";

/** The derived image's name follows its recipe; a failed build names the package it failed on. */
const BASE = "sha256:1111111111111111111111111111111111111111111111111111111111111111";
const toolchain = { apt: ["sl", "figlet"], npm: ["json@11.0.0"], pip: ["requests==2.32.3"] };

describe("a toolchain's image name", () => {
  it("is the same for the same packages in any order, and new for any change", () => {
    const tag = toolchainTag("elf", BASE, toolchain);
    expect(tag).toMatch(/^roster-box-elf:[0-9a-f]{16}$/);
    expect(toolchainTag("elf", BASE, { ...toolchain, apt: ["figlet", "sl"] })).toBe(tag);
    expect(toolchainTag("elf", BASE.replace(/1$/, "2"), toolchain)).not.toBe(tag);
    expect(toolchainTag("elf", BASE, { ...toolchain, npm: ["json@11.0.1"] })).not.toBe(tag);
    expect(toolchainTag("elf", BASE, { ...toolchain, pip: [] })).not.toBe(tag);
  });

  it("installs into the image's system folders, never under the $HOME a run mounts", () => {
    const dockerfile = toolchainDockerfile(BASE, "elf", toolchain);
    expect(dockerfile).toContain("npm install -g --prefix /usr/local");
    expect(dockerfile).toContain("PIP_USER=0 pip install");
    expect(dockerfile).toContain("chmod ug-s");
    expect(dockerfile.trimEnd().endsWith("USER worker")).toBe(true);
  });
});

describe("a failed build's culprit", () => {
  it("is named from apt's, npm's or pip's own words, and only if it was declared", () => {
    expect(blamedPackage(toolchain, "E: Unable to locate package figlet")).toBe(
      'apt package "figlet"',
    );
    expect(
      blamedPackage(
        toolchain,
        "npm error 404 Not Found - GET https://example.test/json - Not found",
      ),
    ).toBe('npm package "json@11.0.0"');
    expect(
      blamedPackage(toolchain, "ERROR: No matching distribution found for requests==2.32.3"),
    ).toBe('pip package "requests==2.32.3"');
    expect(blamedPackage(toolchain, "E: Unable to locate package bash")).toBeUndefined();
  });
});
