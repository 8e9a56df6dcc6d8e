import { connectEngine } from "../../runner/box/connect.ts";
import type { BoxEngine } from "../../runner/box/engine.ts";
import { buildBoxImage } from "../../runner/box/image-build.ts";
import { consoleProgress } from "../../runner/box/progress.ts";
import { isCI } from "./docker.ts";

/**
 * Builds the box image from this checkout before any test runs (seconds when
 * the layer cache is warm; from a clean state on a fresh machine), so every
 * Docker test exercises the code under test, not a stale image.
 */
export default async function setup(): Promise<void> {
  let engine: BoxEngine;
  try {
    engine = await connectEngine();
  } catch (error) {
    if (isCI) throw error;
    console.warn(`no Docker: the box image is not built and Docker tests will skip`);
    return;
  }
  const built = await buildBoxImage({ engine, progress: consoleProgress() });
  console.log(
    `box image ${built.tag} ready (${built.id.slice(7, 19)}, pi ${built.engineVersion}, ${built.seconds.toFixed(1)}s)`,
  );
}
