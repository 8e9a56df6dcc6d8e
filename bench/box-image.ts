/**
 * Box image build costs: a cold build (no layer cache, cached base), a rebuild
 * after touching one extension, and the image size. Run as root with Docker up:
 *   npx tsx bench/box-image.ts
 * Prints a markdown table for bench/RESULTS.md. Builds under its own tag.
 */
import { cp, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connectEngine } from "../runner/boundary/box/connect.ts";
import type { DockerEngine } from "../runner/boundary/box/docker-engine.ts";
import { buildBoxImage, formatBytes } from "../runner/boundary/box/image-build.ts";
import { silentProgress } from "../runner/boundary/box/progress.ts";
import { PROJECT_ROOT } from "../runner/ground/version.ts";

const tag = "roster-box:bench";
const engine = await connectEngine();
const client = (engine as unknown as DockerEngine).client;
const extensions = await mkdtemp(join(tmpdir(), "roster-bench-ext-"));
await cp(join(PROJECT_ROOT, "extensions"), extensions, { recursive: true });
const probe = join(extensions, "bench_probe.ts");
const extension = (n: number) =>
  `export default function (_pi: unknown) {}\nexport const revision = ${n};\n`;

try {
  await writeFile(probe, extension(0));
  const cold = await buildBoxImage({
    engine,
    progress: silentProgress,
    tag,
    extensionsDir: extensions,
    noCache: true,
  });
  const rebuilds: number[] = [];
  for (let n = 1; n <= 3; n++) {
    await writeFile(probe, extension(n));
    const warm = await buildBoxImage({
      engine,
      progress: silentProgress,
      tag,
      extensionsDir: extensions,
    });
    rebuilds.push(warm.seconds);
  }
  rebuilds.sort((a, b) => a - b);
  console.log("| measure | value |");
  console.log("|---|---|");
  console.log(
    `| cold build (no layer cache, base cached: ${cold.base}) | ${cold.seconds.toFixed(1)} s |`,
  );
  console.log(
    `| rebuild after touching one extension (median of 3) | ${rebuilds[1]?.toFixed(2)} s |`,
  );
  console.log(`| image size | ${formatBytes(cold.sizeBytes)} |`);
  console.log(`| cold / rebuild | ${(cold.seconds / (rebuilds[1] ?? 1)).toFixed(0)}x |`);
} finally {
  await client
    .getImage(tag)
    .remove({ force: true })
    .catch(() => undefined);
  await rm(extensions, { recursive: true, force: true });
}
