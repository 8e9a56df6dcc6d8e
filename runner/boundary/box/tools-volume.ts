import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import type { BoxMount } from "./container-spec.ts";
import type { BoxEngine } from "./engine.ts";

/**
 * A worker's persistent toolchain volume: what its runs install for
 * themselves (npm's global prefix, pip's user site, the npm, pip and uv
 * caches, anything under /opt/tools) outlives the run, in a Docker volume
 * mounted at /opt/tools in every box of that worker. Its name carries the id
 * (content digest) of the image it belongs to, so a rebuilt box image or a
 * changed toolchain gets a new, empty volume that Docker seeds from the new
 * image's own /opt/tools at first mount: an old volume can never shadow what
 * a newer image ships. Two boxes of one worker share it; npm and pip lock
 * their own caches, and anything else that writes there should take
 * `roster-lock <name>` around it.
 */
export const TOOLS_DIR = "/opt/tools";
export const TOOLS_LABELS = {
  worker: "org.roster.tools.worker",
  image: "org.roster.tools.image",
  deployment: "org.roster.tools.deployment",
} as const;

/** Which roster deployment (config root) a volume belongs to: one host may serve several. */
export function deploymentKey(configRoot: string): string {
  return createHash("sha256").update(configRoot).digest("hex").slice(0, 8);
}

export function toolsVolumeName(deployment: string, worker: string, imageId: string): string {
  return `roster-tools-${deployment}-${worker}-${imageId.replace(/^sha256:/, "").slice(0, 16)}`;
}

/** Creates the volume if it is not there. */
export async function ensureToolsVolume(
  engine: BoxEngine,
  deployment: string,
  worker: string,
  imageId: string,
): Promise<string> {
  const name = toolsVolumeName(deployment, worker, imageId);
  await engine.ensureVolume(name, {
    [TOOLS_LABELS.deployment]: deployment,
    [TOOLS_LABELS.worker]: worker,
    [TOOLS_LABELS.image]: imageId,
  });
  return name;
}

/**
 * Where the volume's bytes are on this host, when this process can see them
 * (the engine's local driver, and the runner root or in Docker's group): what the
 * disk watch measures. Undefined elsewhere; the volume is then not measured.
 */
export async function toolsVolumePath(
  engine: BoxEngine,
  name: string,
): Promise<string | undefined> {
  const path = await engine.volumePath(name);
  return path && existsSync(path) ? path : undefined;
}

export function toolsMount(volume: string): BoxMount {
  return { source: volume, target: TOOLS_DIR, readOnly: false };
}

/** Where package managers put what a run installs: under the volume, never the throwaway $HOME. */
export function toolsEnvironment(): Record<string, string> {
  return {
    ROSTER_TOOLS_DIR: TOOLS_DIR,
    NPM_CONFIG_PREFIX: `${TOOLS_DIR}/npm`,
    NPM_CONFIG_CACHE: `${TOOLS_DIR}/cache/npm`,
    PYTHONUSERBASE: `${TOOLS_DIR}/python`,
    PIP_CACHE_DIR: `${TOOLS_DIR}/cache/pip`,
    UV_CACHE_DIR: `${TOOLS_DIR}/cache/uv`,
    // what the volume holds comes last: it outlives the run that wrote it, so a name planted
    // there (a `git`, a `node`) must never shadow the image's own in a later run
    PATH: [
      "/opt/roster/engine/bin",
      "/usr/local/sbin",
      "/usr/local/bin",
      "/usr/sbin",
      "/usr/bin",
      "/sbin",
      "/bin",
      "/home/worker/.local/bin",
      `${TOOLS_DIR}/npm/bin`,
      `${TOOLS_DIR}/python/bin`,
    ].join(":"),
  };
}
