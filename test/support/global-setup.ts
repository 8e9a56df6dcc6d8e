import { connectEngine } from "../../runner/box/connect.ts";
import { ensureCurrentImage } from "../../runner/box/current-image.ts";
import type { BoxEngine } from "../../runner/box/engine.ts";
import { BOX_IMAGE } from "../../runner/box/layout.ts";
import { consoleProgress } from "../../runner/box/progress.ts";
import { isCI } from "./docker.ts";

/**
 * Makes the box image current for this checkout before any test runs: built
 * when it is missing or was built from other sources than the ones on disk
 * (the same check every run makes, box/current-image.ts), so every engine test
 * exercises the code under test, not a stale image. An engine that was given
 * a current image (Podman, loaded from Docker's) builds nothing.
 */
export default async function setup(): Promise<void> {
  let engine: BoxEngine;
  try {
    engine = await connectEngine();
  } catch (error) {
    if (isCI) throw error;
    console.warn(`no container engine: the box image is not built and engine tests will skip`);
    return;
  }
  const started = Date.now();
  const id = await ensureCurrentImage({
    engine,
    image: BOX_IMAGE,
    progress: consoleProgress(),
    note: (text) => console.log(text),
  });
  console.log(
    `box image ${BOX_IMAGE} ready on ${engine.kind} (${id.slice(7, 19)}, ${((Date.now() - started) / 1000).toFixed(1)}s)`,
  );
}
