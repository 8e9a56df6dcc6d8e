import type Docker from "dockerode";
import { type LoadedConfig, workerView } from "../config/load.ts";
import { projectToolchains, withProjects } from "../config/project-toolchain.ts";
import { toolchainIsEmpty } from "../config/toolchain-schema.ts";
import { errorMessage } from "../errors.ts";
import { readWheels, TOOLCHAIN_DEPLOYMENT_LABEL, toolchainTag } from "./toolchain-image.ts";
import { deploymentKey, TOOLS_LABELS, toolsVolumeName } from "./tools-volume.ts";

/**
 * `roster box prune`: the toolchain images and toolchain volumes no current
 * worker would use — built for a box image or a declaration that has since
 * changed, or for a worker that is gone. What a running box mounts or runs
 * from is never removed (Docker refuses, and it is reported as kept).
 */
export interface PruneReport {
  removed: { kind: "image" | "volume"; name: string; bytes: number }[];
  kept: { kind: "image" | "volume"; name: string; why: string }[];
  freedBytes: number;
}

/** The image tag and tools volume each worker would use now. */
async function currentNames(
  docker: Docker,
  config: LoadedConfig,
  boxImage: string,
): Promise<{ tags: Set<string>; volumes: Set<string> }> {
  const tags = new Set<string>();
  const volumes = new Set<string>();
  const base = await docker
    .getImage(boxImage)
    .inspect()
    .catch(() => undefined);
  if (!base) return { tags, volumes };
  for (const name of config.workers.keys()) {
    const worker = workerView(config, name);
    if (!worker) continue;
    const projects = await projectToolchains(worker.mounts);
    const toolchain = withProjects(worker.toolchain, projects.toolchain);
    const tag = toolchainIsEmpty(toolchain)
      ? boxImage
      : toolchainTag(
          name,
          base.Id,
          toolchain,
          await readWheels(toolchain.pipWheels).catch(() => []),
        );
    tags.add(tag);
    const image = await docker
      .getImage(tag)
      .inspect()
      .catch(() => undefined);
    if (image) volumes.add(toolsVolumeName(deploymentKey(config.root), name, image.Id));
  }
  return { tags, volumes };
}

export async function pruneToolchains(
  docker: Docker,
  config: LoadedConfig,
  boxImage: string,
): Promise<PruneReport> {
  const report: PruneReport = { removed: [], kept: [], freedBytes: 0 };
  const current = await currentNames(docker, config, boxImage);
  // volumes first: an image whose volume a running box holds is in use too
  const usage = await docker.df().catch(() => undefined);
  const sizes = new Map<string, number>(
    ((usage?.Volumes ?? []) as { Name: string; UsageData?: { Size?: number } }[]).map((v) => [
      v.Name,
      Math.max(0, v.UsageData?.Size ?? 0),
    ]),
  );
  const { Volumes: volumes } = await docker.listVolumes({
    // only this deployment's: another roster on this host keeps its own
    filters: { label: [`${TOOLS_LABELS.deployment}=${deploymentKey(config.root)}`] },
  });
  for (const volume of volumes ?? []) {
    if (current.volumes.has(volume.Name)) continue;
    try {
      await docker.getVolume(volume.Name).remove();
      const bytes = sizes.get(volume.Name) ?? 0;
      report.removed.push({ kind: "volume", name: volume.Name, bytes });
      report.freedBytes += bytes;
    } catch (error) {
      report.kept.push({ kind: "volume", name: volume.Name, why: reason(error) });
    }
  }
  const images = await docker.listImages({
    filters: { label: [`${TOOLCHAIN_DEPLOYMENT_LABEL}=${deploymentKey(config.root)}`] },
  });
  for (const image of images) {
    const tags = (image.RepoTags ?? []).filter((tag) => tag !== "<none>:<none>");
    if (tags.some((tag) => current.tags.has(tag))) continue;
    const name = tags[0] ?? image.Id;
    try {
      await docker.getImage(image.Id).remove();
      report.removed.push({ kind: "image", name, bytes: image.Size });
      report.freedBytes += image.Size;
    } catch (error) {
      report.kept.push({ kind: "image", name, why: reason(error) });
    }
  }
  return report;
}

function reason(error: unknown): string {
  return (error as { statusCode?: number }).statusCode === 409
    ? "in use by a box"
    : (errorMessage(error).split("\n")[0] ?? "refused");
}
