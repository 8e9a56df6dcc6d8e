import { durationMs } from "../../ground/config/duration.ts";
import type { WorkerView } from "../../ground/config/worker-view.ts";
import { parseByteSize } from "../../ground/text/byte-size.ts";
import { agentEnvironment } from "./agent-env.ts";
import { boxEnvironment } from "./box-env.ts";
import type { BoxMount, BoxSpec } from "./container-spec.ts";
import { type BoxUser, boxContainerName, CONTAINER_LABELS, DOOR_PORT } from "./layout.ts";
import { toolsEnvironment, toolsMount } from "./tools-volume.ts";

/**
 * The whole box spec for one worker's run, whatever drives pi in it (a
 * one-shot run, a task, a chat session): env with the run's token and the
 * sentinels, the $HOME mounts, the worker's (already narrowed) limits, the
 * labels orphans are found by. Callers add only the command and what is
 * particular to their mode.
 */
/** What the spec needs of the run's $HOME (home/build-home.ts builds it): its mounts, its owner, its cloned repos. */
export interface BoxHome {
  mounts: BoxMount[];
  user: BoxUser;
  repos: { repos: readonly object[] };
}

export interface WorkerBoxInput {
  worker: WorkerView;
  runId: string;
  /** The deployment starting it (layout.ts deploymentLabel), so only its own sweep reaps it. */
  deployment: string;
  image: string;
  home: BoxHome;
  token: string;
  /** The folder holding the gateway's door (its socket), mounted into the box. */
  door: string;
  /** The model provider's key variable, holding a sentinel. */
  keyEnv: string | undefined;
  cmd: string[];
  /** Mode-specific variables (ROSTER_CEILING_MIN, ROSTER_TASK_ID, …). */
  env?: Record<string, string>;
  /** The worker's toolchain volume for this image, mounted at /opt/tools. */
  toolsVolume?: string;
  interactive?: boolean;
  /** Its stdin closes when the runner ends it (container-spec.ts). */
  stdinOnce?: boolean;
}

export function workerBoxSpec(input: WorkerBoxInput): BoxSpec {
  const { worker } = input;
  const stallMs = durationMs(worker.box.stall_after);
  const env = {
    ...boxEnvironment({
      token: input.token,
      // roster-door opens the gateway's socket here, on the box's own loopback
      gatewayHost: "127.0.0.1",
      gatewayPort: DOOR_PORT,
      runId: input.runId,
      sentinels: [...worker.sentinels, ...(input.keyEnv ? [input.keyEnv] : [])],
      ...(input.home.repos.repos.length
        ? { reposJson: JSON.stringify(input.home.repos.repos) }
        : {}),
      ...(worker.mcp.length ? { mcpJson: JSON.stringify(worker.mcp) } : {}),
    }),
    ...(input.toolsVolume ? toolsEnvironment() : {}),
    // roster-busy refreshes its mark well inside this window
    ...(stallMs !== undefined
      ? { ROSTER_STALL_AFTER_SECS: String(Math.ceil(stallMs / 1000)) }
      : {}),
    ROSTER_RENDER_SECS: String(worker.box.render_secs),
    ...agentEnvironment(worker),
    ...input.env,
  };
  return {
    image: input.image,
    name: boxContainerName(input.runId),
    cmd: input.cmd,
    env,
    mounts: input.toolsVolume
      ? [...input.home.mounts, toolsMount(input.toolsVolume)]
      : input.home.mounts,
    user: input.home.user,
    door: input.door,
    limits: {
      ...(worker.box.pids_limit ? { pids: worker.box.pids_limit } : {}),
      ...(worker.box.memory ? { memoryBytes: parseByteSize(worker.box.memory) } : {}),
      ...(worker.box.cpus ? { cpus: worker.box.cpus } : {}),
    },
    labels: {
      [CONTAINER_LABELS.worker]: worker.name,
      [CONTAINER_LABELS.run]: input.runId,
      [CONTAINER_LABELS.deployment]: input.deployment,
    },
    ...(input.interactive ? { interactive: true } : {}),
    ...(input.stdinOnce ? { stdinOnce: true } : {}),
    runtime: worker.box.runtime,
  };
}
