import { writeFile } from "node:fs/promises";
import type { TestProject } from "vitest/node";
import { connectEngine } from "../../runner/boundary/box/connect.ts";
import { ensureCurrentImage } from "../../runner/boundary/box/current-image.ts";
import type { BoxEngine } from "../../runner/boundary/box/engine.ts";
import { BOX_IMAGE, OFFLINE_BASE } from "../../runner/boundary/box/layout.ts";
import { consoleProgress, type Progress } from "../../runner/boundary/box/progress.ts";
import { isCI } from "./docker.ts";

/**
 * What this setup built, when it had to build the Debian base itself (a
 * machine with no registry and no cached base, as CI's is): the lines the
 * build said and the images it made. test/box/offline-base.test.ts checks that
 * build instead of making a second one (docs/box.md, "Building the box").
 */
export interface SetupBaseBuild {
  /** Every step and note the build printed. */
  said: string[];
  baseId: string;
  imageId: string;
}

declare module "vitest" {
  export interface ProvidedContext {
    setupBaseBuild: SetupBaseBuild | null;
  }
}

/**
 * Makes the box image current for this checkout before any test runs: built
 * when it is missing or was built from other sources than the ones on disk
 * (the same check every run makes, box/current-image.ts), so every engine test
 * exercises the code under test, not a stale image. An engine that was given
 * a current image (Podman, loaded from Docker's) builds nothing.
 */
export default async function setup(project: TestProject): Promise<void> {
  project.provide("setupBaseBuild", null);
  let engine: BoxEngine;
  try {
    engine = await connectEngine();
  } catch (error) {
    if (isCI) throw error;
    console.warn(`no container engine: the box image is not built and engine tests will skip`);
    return;
  }
  const started = Date.now();
  const said: string[] = [];
  const shown = consoleProgress();
  const progress: Progress = {
    step: (label) => {
      said.push(label);
      shown.step(label);
    },
    note: (line) => {
      said.push(line);
      shown.note(line);
    },
    detail: (line) => shown.detail(line),
  };
  const id = await ensureCurrentImage({
    engine,
    image: BOX_IMAGE,
    progress,
    note: (text) => console.log(text),
  });
  const base = said.some((line) => line.startsWith("base: debootstrap"))
    ? await engine.image(OFFLINE_BASE)
    : undefined;
  if (base) project.provide("setupBaseBuild", { said, baseId: base.id, imageId: id });
  console.log(
    `box image ${BOX_IMAGE} ready on ${engine.kind} (${id.slice(7, 19)}, ${((Date.now() - started) / 1000).toFixed(1)}s)${base ? `, on a base it built from Debian packages` : ""}`,
  );
  // scripts/test-lanes.mjs starts its host lane once the build (the busiest
  // part of the run) is over
  const told = process.env.ROSTER_TEST_IMAGE_READY;
  if (told) await writeFile(told, `${id}\n`);
}
