import type { AgentKind } from "../../ground/config/agent-schema.ts";
import type { Toolchain } from "../../ground/config/toolchain-schema.ts";
import { ensureAgentImage } from "./agent-image.ts";
import type { BoxEngine } from "./engine.ts";
import type { Progress } from "./progress.ts";
import { ensureToolchainImage } from "./toolchain-image.ts";

/**
 * The image a worker's boxes start from, in its layers: the box image, the
 * agent's layer when its agent is not pi (agent-image.ts), then its
 * toolchain (toolchain-image.ts). Each is built only when missing, and each
 * tag covers the one under it, so a rebuilt box image rebuilds the rest.
 */
export interface WorkerImage {
  tag: string;
  /** The agent's layer (the box image itself for pi). */
  agentTag: string;
  /** The layers built now (none when every one was current). */
  builtNow: string[];
  seconds: number;
}

export async function ensureWorkerImage(options: {
  engine: BoxEngine;
  baseImage: string;
  worker: string;
  agent: AgentKind;
  toolchain: Toolchain;
  progress: Progress;
  env?: NodeJS.ProcessEnv;
  deployment?: string;
}): Promise<WorkerImage> {
  const { engine, worker, agent, toolchain, progress, env, deployment } = options;
  const scope = {
    engine,
    progress,
    ...(env ? { env } : {}),
    ...(deployment ? { deployment } : {}),
  };
  const agentImage = await ensureAgentImage({ ...scope, baseImage: options.baseImage, agent });
  const toolchainImage = await ensureToolchainImage({
    ...scope,
    baseImage: agentImage.tag,
    worker,
    toolchain,
  });
  return {
    tag: toolchainImage.tag,
    agentTag: agentImage.tag,
    builtNow: [
      ...(agentImage.built ? [agentImage.tag] : []),
      ...(toolchainImage.built ? [toolchainImage.tag] : []),
    ],
    seconds: agentImage.seconds + toolchainImage.seconds,
  };
}
