import { createHash } from "node:crypto";

/**
 * Names and paths shared by the image recipe (box/Dockerfile) and the host code
 * that starts boxes. Keep them in step with the Dockerfile.
 */
export const BOX_IMAGE = "roster-box:latest";
/** What a user with a container registry gets as the base. */
export const DEFAULT_BASE = "node:24-bookworm-slim";
/** The base built from Debian packages when no registry can be reached. */
export const OFFLINE_BASE = "roster-base:bookworm-node24";

export const ENGINE_DIR = "/opt/roster/engine";
export const RUN_PI = `${ENGINE_DIR}/run-pi`;
/** Where an agent layer (agent-image.ts) puts Claude Code's or Codex's package. */
export const AGENTS_DIR = "/opt/roster/agents";
/** The launchers of the other agents, beside run-pi (they fail legibly when their layer is absent). */
export const RUN_CLAUDE = `${ENGINE_DIR}/run-claude`;
export const RUN_CODEX = `${ENGINE_DIR}/run-codex`;
/** The box's MCP server of our tools (engine/roster-mcp.ts), for the agents that are not pi. */
export const RUN_ROSTER_MCP = `${ENGINE_DIR}/run-roster-mcp`;
/** What a ready box for `box exec` runs until its command comes (box/roster-ready). */
export const READY_WAITER = "/usr/local/bin/roster-ready";
export const BOX_UID = 1000;
export const BOX_GID = 1000;
export const BOX_HOME = "/home/worker";

export interface BoxUser {
  uid: number;
  gid: number;
}

/** The image's user when we can hand files to it (root, or already that uid); else the runner's own uid. */
export function boxUser(): BoxUser {
  const uid = process.getuid?.() ?? BOX_UID;
  const gid = process.getgid?.() ?? BOX_GID;
  return uid === 0 ? { uid: BOX_UID, gid: BOX_GID } : { uid, gid };
}

/**
 * The box contract an image is built for (its `org.roster.box` label): what
 * the runner may expect of it. 2: no network, and box/roster-door at
 * ROSTER_DOOR. An image built for another is rebuilt (roster's own) or
 * refused, never started half-working.
 */
export const BOX_CONTRACT = "2";

/** Image labels written at build time and read by `roster box doctor`. */
export const LABELS = {
  box: "org.roster.box",
  engineVersion: "org.roster.engine.version",
  extensions: "org.roster.extensions",
  baseImage: "org.roster.base",
  /** The hash of what the image was built from (box/source-hash.ts). */
  source: "org.roster.source",
  /** The name roster built it as: an image under another name (one built FROM it) is not roster's to rebuild. */
  tag: "org.roster.tag",
  /** On the Debian-built base: the hash of the recipe it was made by (offline-base.ts). */
  baseRecipe: "org.roster.base.recipe",
} as const;

/** Container labels that let orphaned boxes be found. */
export const CONTAINER_LABELS = {
  worker: "roster.worker",
  run: "roster.run",
  runnerPid: "roster.runner.pid",
  /** Which deployment started it (deploymentLabel): a sweep touches only its own. */
  deployment: "roster.deployment",
} as const;

/**
 * A deployment's mark on its boxes: a digest of its state folder. One engine
 * may serve several deployments (two users, a test beside a server); a runner
 * pid means something only to the deployment that wrote it, so each sweeps
 * only the boxes it started.
 */
export function deploymentLabel(state: string): string {
  return createHash("sha256").update(`roster-deployment\0${state}`).digest("hex").slice(0, 24);
}

/** A run's box container: one per run, so the run id names it. */
export function boxContainerName(runId: string): string {
  return `roster-box-${runId}`;
}

/** The throwaway container that settles one gated repo of a run after it ended. */
export function backstopContainerName(runId: string, connection: string): string {
  return `roster-backstop-${runId}-${connection}`;
}

/**
 * The gateway's door inside a box. A box has no network (Docker's `none`: only
 * loopback); the runner mounts the folder holding its gateway's Unix socket
 * (DOOR_SOCKET, named by the gateway that opens it) here, read-only, and
 * box/roster-door opens DOOR_PORT on the box's loopback onto it. Both numbers
 * are written into box/roster-door too.
 */
export const DOOR_MOUNT = "/run/roster/door";
export { DOOR_SOCKET } from "../gateway/doors/door.ts";
export const DOOR_PORT = 7300;
export const ROSTER_DOOR = "/usr/local/bin/roster-door";
