import { execFileSync } from "node:child_process";
import type Docker from "dockerode";
import type { ImageInfo } from "dockerode";
import { describe, expect, inject, it } from "vitest";
import { onPath } from "../../runner/boundary/box/host-program.ts";
import { BOX_IMAGE, LABELS, OFFLINE_BASE } from "../../runner/boundary/box/layout.ts";
import { baseRecipeHash, NODE_PACKAGE_VERSION } from "../../runner/boundary/box/offline-base.ts";
import { ENGINE_PIN } from "../../runner/ground/version.ts";
import { runRoster } from "../support/cli.ts";
import { testDocker } from "../support/docker.ts";

/**
 * The way to a box (docs/box.md, "Building the box") on a host that reaches
 * Debian's mirror and the npm registry but no container registry: `roster box
 * build --rebuild-base` debootstraps bookworm, puts Node in it from the npm
 * package, imports that as the base, and builds the box on it. The image it
 * makes must run pi. Minutes long (a whole Debian and a whole box image), so
 * it is made once per recipe: on a machine where the test setup had to build
 * the base itself (no registry, and no base made by this recipe: CI's first
 * run, or any run after runner/boundary/box/offline-base.ts or its Node pin changed),
 * that build is the one checked, with every assertion but the CLI's own JSON,
 * rather than made a second time; where a base made by this very recipe is
 * cached (its label says so, and the box image stands on it), that base is the
 * one checked; only where neither is there (the box stands on a registry base)
 * does this test make one itself.
 */
const docker = await testDocker();
const canDebootstrap = process.getuid?.() === 0 && (await onPath("debootstrap"));
if (docker && !canDebootstrap)
  console.warn("skipping the offline base build: it needs root and debootstrap");

const TAG = "roster-test-offline-box:latest";

/** Runs a command in a throwaway container of `image`, with no network; its output. */
const runIn = (image: string, command: string[]) =>
  execFileSync("docker", ["run", "--rm", "--network", "none", image, ...command], {
    encoding: "utf8",
  }).trim();

/** A clean-up step: one that fails (nothing to remove) leaves the test's own verdict standing. */
function quietDocker(args: string[]): void {
  try {
    execFileSync("docker", args, { stdio: "ignore" });
  } catch {
    // already gone, or an image still stands on it: nothing more to undo
  }
}

/**
 * Removes the base this test made with the untagged images built on it (the
 * build's stages), leaves first. An image someone tagged on it in the meantime
 * keeps them all: it is not this test's to remove.
 */
async function removeBuiltOn(client: Docker, base: string): Promise<void> {
  const images = await client.listImages({ all: true });
  const order: ImageInfo[] = [];
  const walk = (parent: string) => {
    for (const child of images.filter((image) => image.ParentId === parent)) {
      walk(child.Id);
      order.push(child);
    }
  };
  walk(base);
  const tagged = (image: ImageInfo) =>
    (image.RepoTags ?? []).some((tag) => tag !== "<none>:<none>");
  if (order.some(tagged)) return;
  for (const image of [...order.map((i) => i.Id), base]) quietDocker(["rmi", image]);
}

/** The cached base and the box image, when the box stands on a base made by this recipe. */
async function currentBase(client: Docker | undefined) {
  const base = await client
    ?.getImage(OFFLINE_BASE)
    .inspect()
    .catch(() => undefined);
  const box = await client
    ?.getImage(BOX_IMAGE)
    .inspect()
    .catch(() => undefined);
  const made = base?.Config?.Labels?.[LABELS.baseRecipe] === baseRecipeHash();
  // on it: named as its base, and its layers are the base's and then its own
  const layers = base?.RootFS?.Layers ?? [];
  const on =
    box?.Config?.Labels?.[LABELS.baseImage] === OFFLINE_BASE &&
    layers.length > 0 &&
    layers.every((layer, at) => box?.RootFS?.Layers?.[at] === layer);
  return base && box && made && on ? { baseId: base.Id, imageId: box.Id } : undefined;
}

// the test setup built the base itself on this machine (no registry, no base of this recipe)
const setupBuild = inject("setupBaseBuild");
// else: a base this recipe made in an earlier run, with the box standing on it
const reused = setupBuild || !docker ? undefined : await currentBase(docker);

describe.skipIf(!docker || !canDebootstrap)("a box built without a registry", () => {
  const client = docker as NonNullable<typeof docker>;

  it.runIf(setupBuild)(
    "the setup debootstrapped the base, put Node from npm in it, and built on it a box that runs pi",
    async () => {
      // the same build `--rebuild-base` makes, made minutes ago for every suite: checked, not repeated
      const build = setupBuild as NonNullable<typeof setupBuild>;
      console.log("checking the base the test setup built from Debian packages in this run");
      expect(build.said).toContain(
        "base: debootstrap bookworm (minbase) from the host's Debian mirror",
      );
      expect(build.said.some((line) => line.startsWith(`base: Node ${NODE_PACKAGE_VERSION}`))).toBe(
        true,
      );
      expect(await currentBase(client)).toEqual({ baseId: build.baseId, imageId: build.imageId });
      checkBase();
    },
  );

  it.runIf(reused)(
    "a base made by this recipe is reused: it runs the pinned Node, and the box on it runs pi",
    async () => {
      console.log("checking the cached base this recipe made in an earlier run");
      expect(await currentBase(client)).toEqual(reused);
      checkBase();
    },
  );

  /** What a made base and the box on it must be, whichever run made them. */
  function checkBase(): void {
    expect(runIn(OFFLINE_BASE, ["node", "--version"])).toBe(`v${NODE_PACKAGE_VERSION}`);
    expect(runIn(OFFLINE_BASE, ["cat", "/etc/debian_version"])).toMatch(/^12\./);
    const labels = execFileSync(
      "docker",
      ["image", "inspect", BOX_IMAGE, "--format", "{{json .Config.Labels}}"],
      { encoding: "utf8" },
    );
    expect(JSON.parse(labels)).toMatchObject({
      [LABELS.baseImage]: OFFLINE_BASE,
      [LABELS.engineVersion]: ENGINE_PIN,
    });
    expect(runIn(BOX_IMAGE, ["run-pi", "--version"])).toBe(ENGINE_PIN);
  }

  it.skipIf(setupBuild || reused)(
    "debootstraps the base, puts Node from npm in it, and builds a box that runs pi",
    async () => {
      // other tests build on the cached base: one this recipe made is put back afterwards
      // (one made by another recipe, or before bases carried theirs, gives way to the new one)
      const before = await client
        .getImage(OFFLINE_BASE)
        .inspect()
        .catch(() => undefined);
      const previous = before?.Id;
      const restore = before?.Config?.Labels?.[LABELS.baseRecipe] === baseRecipeHash();
      let built: string | undefined;
      try {
        const result = await runRoster(
          ["box", "build", "--rebuild-base", "--tag", TAG, "--json"],
          {},
          1_500_000,
        );
        expect(result.code, result.stderr.slice(-3000)).toBe(0);
        expect(result.stderr).toContain("base: debootstrap bookworm (minbase)");
        expect(result.stderr).toContain(`base: Node ${NODE_PACKAGE_VERSION}`);
        expect(JSON.parse(result.stdout)).toMatchObject({
          tag: TAG,
          base: OFFLINE_BASE,
          engineVersion: ENGINE_PIN,
        });
        const made = await client.getImage(OFFLINE_BASE).inspect();
        built = made.Id;
        expect(built).not.toBe(previous);
        // it says which recipe made it: the next run reuses it while that recipe holds
        expect(made.Config?.Labels?.[LABELS.baseRecipe]).toBe(baseRecipeHash());

        // the base is Debian bookworm with the pinned Node, made from no registry image
        expect(runIn(OFFLINE_BASE, ["node", "--version"])).toBe(`v${NODE_PACKAGE_VERSION}`);
        expect(runIn(OFFLINE_BASE, ["cat", "/etc/debian_version"])).toMatch(/^12\./);
        // the box on it: labelled for the pinned engine, and pi runs
        const labels = (await client.getImage(TAG).inspect()).Config?.Labels ?? {};
        expect(labels[LABELS.engineVersion]).toBe(ENGINE_PIN);
        expect(runIn(TAG, ["run-pi", "--version"])).toBe(ENGINE_PIN);
      } finally {
        quietDocker(["rmi", "-f", TAG]);
        if (restore && previous && built && built !== previous) {
          quietDocker(["tag", previous, OFFLINE_BASE]);
          await removeBuiltOn(client, built);
        }
      }
    },
    1_800_000,
  );
});
