import type { LoadedConfig } from "../../ground/config/load.ts";
import { projectToolchains, withProjects } from "../../ground/config/project-toolchain.ts";
import { toolchainIsEmpty } from "../../ground/config/toolchain-schema.ts";
import { workerView } from "../../ground/config/worker-view.ts";
import { errorMessage } from "../../ground/errors.ts";
import { AGENT_DEPLOYMENT_LABEL, agentRecipe } from "./agent-image.ts";
import { type BoxEngine, InUse } from "./engine.ts";
import { readWheels, TOOLCHAIN_DEPLOYMENT_LABEL, toolchainTag } from "./toolchain-image.ts";
import { deploymentKey, TOOLS_LABELS, toolsVolumeName } from "./tools-volume.ts";

/**
 * `roster box prune`: the toolchain images, agent layers and toolchain
 * volumes no current worker would use — built for a box image, an agent or a
 * declaration that has since changed, or for a worker that is gone. What a
 * running box mounts or runs from is never removed (the engine refuses, and
 * it is reported as kept). An agent layer is this deployment's to remove when
 * it built it (its label says so): another deployment on the same engine
 * whose box image is not ours rebuilds it on its next run.
 */
export interface PruneReport {
  removed: { kind: "image" | "volume"; name: string; bytes: number }[];
  kept: { kind: "image" | "volume"; name: string; why: string }[];
  freedBytes: number;
}

/** The image tag and tools volume each worker would use now. */
async function currentNames(
  engine: BoxEngine,
  config: LoadedConfig,
  boxImage: string,
): Promise<{ tags: Set<string>; volumes: Set<string> }> {
  const tags = new Set<string>();
  const volumes = new Set<string>();
  const base = await engine.image(boxImage);
  if (!base) return { tags, volumes };
  for (const name of config.workers.keys()) {
    const worker = workerView(config, name);
    if (!worker) continue;
    // the toolchain stands on the agent's layer (worker-image.ts)
    const agentTag =
      worker.agent === "pi" ? boxImage : (await agentRecipe(engine, base, worker.agent)).tag;
    tags.add(agentTag);
    const under = agentTag === boxImage ? base : await engine.image(agentTag);
    if (!under) continue;
    const projects = await projectToolchains(worker.mounts);
    const toolchain = withProjects(worker.toolchain, projects.toolchain);
    const tag = toolchainIsEmpty(toolchain)
      ? agentTag
      : toolchainTag(
          name,
          under.id,
          toolchain,
          await readWheels(toolchain.pipWheels).catch(() => []),
        );
    tags.add(tag);
    const image = await engine.image(tag);
    if (image) volumes.add(toolsVolumeName(deploymentKey(config.root), name, image.id));
  }
  return { tags, volumes };
}

export async function pruneToolchains(
  engine: BoxEngine,
  config: LoadedConfig,
  boxImage: string,
): Promise<PruneReport> {
  const report: PruneReport = { removed: [], kept: [], freedBytes: 0 };
  const current = await currentNames(engine, config, boxImage);
  // volumes first: an image whose volume a running box holds is in use too
  const volumes = await engine.listVolumes(
    `${TOOLS_LABELS.deployment}=${deploymentKey(config.root)}`,
  );
  for (const volume of volumes) {
    if (current.volumes.has(volume.name)) continue;
    try {
      await engine.removeVolume(volume.name);
      report.removed.push({ kind: "volume", name: volume.name, bytes: volume.sizeBytes });
      report.freedBytes += volume.sizeBytes;
    } catch (error) {
      report.kept.push({ kind: "volume", name: volume.name, why: reason(error) });
    }
  }
  const images = [
    ...(await engine.listImages(`${TOOLCHAIN_DEPLOYMENT_LABEL}=${deploymentKey(config.root)}`)),
    ...(await engine.listImages(`${AGENT_DEPLOYMENT_LABEL}=${deploymentKey(config.root)}`)),
  ];
  for (const image of images) {
    if (image.tags.some((tag) => current.tags.has(tag))) continue;
    const name = image.tags[0] ?? image.id;
    try {
      await engine.removeImage(image.id);
      report.removed.push({ kind: "image", name, bytes: image.sizeBytes });
      report.freedBytes += image.sizeBytes;
    } catch (error) {
      report.kept.push({ kind: "image", name, why: reason(error) });
    }
  }
  return report;
}

function reason(error: unknown): string {
  return error instanceof InUse
    ? "in use by a box"
    : (errorMessage(error).split("\n")[0] ?? "refused");
}
