import type Docker from "dockerode";
import { type BoxLimits, DEFAULT_LIMITS } from "../../ground/config/box-limits.ts";
import { BOX_GID, BOX_HOME, BOX_UID, CONTAINER_LABELS, DOOR_MOUNT, ROSTER_DOOR } from "./layout.ts";
import { DEFAULT_RUNTIME, hostPidsLimit } from "./runtime.ts";

/**
 * The box contract as Docker options: every container roster starts — a one-shot
 * run or a warm chat session — is made here, so the hardening lives in one place.
 * Callers say what differs (image, command, mounts, env, limits); they cannot
 * turn the hardening off.
 */
export interface BoxMount {
  source: string;
  target: string;
  readOnly: boolean;
}

export const TMP_SIZE_BYTES = 2 * 1024 ** 3;

/**
 * Open files a box may hold: plenty for an honest worker (builds, language
 * servers, a test suite), and well under the gateway's, so a box can't take
 * the host's descriptors even before its door's own cap (gateway/doors/run-doors.ts).
 */
export const BOX_OPEN_FILES = 4096;

export interface BoxSpec {
  image: string;
  cmd: string[];
  name?: string;
  env?: Record<string, string>;
  mounts?: BoxMount[];
  limits?: Partial<BoxLimits>;
  labels?: Record<string, string>;
  workdir?: string;
  /**
   * The host folder holding the gateway's door (its Unix socket): mounted
   * read-only at DOOR_MOUNT, and the command then runs under roster-door, which
   * opens the door on the box's loopback. Without it the box has no way out at
   * all (a box that only checks files, say).
   */
  door?: string;
  /** uid:gid to run as; the image's non-root user by default. Never root. */
  user?: { uid: number; gid: number };
  /** Keep stdin open (warm sessions speak pi's RPC over it). */
  interactive?: boolean;
  /**
   * The box's stdin closes when the runner ends its side (an interactive box
   * that must see end-of-input: a ready box's pi, told one task over RPC).
   */
  stdinOnce?: boolean;
  /** The OCI runtime ("runsc" for gVisor); the engine's default (runc) when unset. */
  runtime?: string;
}

export function containerCreateOptions(spec: BoxSpec): Docker.ContainerCreateOptions {
  const limits = { ...DEFAULT_LIMITS, ...spec.limits };
  const env = {
    HOME: BOX_HOME,
    TMPDIR: "/tmp",
    PI_CODING_AGENT_DIR: `${BOX_HOME}/agent`,
    ...spec.env,
  };
  return {
    ...(spec.name ? { name: spec.name } : {}),
    Image: spec.image,
    Cmd: spec.door ? [ROSTER_DOOR, ...spec.cmd] : spec.cmd,
    User: `${spec.user && spec.user.uid !== 0 ? spec.user.uid : BOX_UID}:${spec.user && spec.user.uid !== 0 ? spec.user.gid : BOX_GID}`,
    WorkingDir: spec.workdir ?? `${BOX_HOME}/workspace`,
    Env: Object.entries(env).map(([key, value]) => `${key}=${value}`),
    Labels: { [CONTAINER_LABELS.runnerPid]: String(process.pid), ...spec.labels },
    AttachStdin: spec.interactive ?? false,
    OpenStdin: spec.interactive ?? false,
    StdinOnce: spec.stdinOnce ?? false,
    AttachStdout: true,
    AttachStderr: true,
    Tty: false,
    HostConfig: {
      // No network at all, only loopback: no route out, no address of the
      // host's, no resolver (names are resolved by the gateway, never by the
      // box). The one way out is the door, a socket mounted from the host.
      NetworkMode: "none",
      Dns: ["127.0.0.1"],
      CapDrop: ["ALL"],
      SecurityOpt: ["no-new-privileges"],
      ReadonlyRootfs: true,
      Init: true,
      Tmpfs: { "/tmp": `rw,exec,nosuid,nodev,size=${TMP_SIZE_BYTES},mode=1777` },
      PidsLimit: hostPidsLimit(spec.runtime, limits.pids),
      // soft and hard alike: the box can't raise its own
      Ulimits: [{ Name: "nofile", Soft: BOX_OPEN_FILES, Hard: BOX_OPEN_FILES }],
      Memory: limits.memoryBytes,
      MemorySwap: limits.memoryBytes,
      NanoCpus: Math.round(limits.cpus * 1e9),
      Binds: [
        ...(spec.mounts ?? []).map(
          (mount) => `${mount.source}:${mount.target}:${mount.readOnly ? "ro" : "rw"}`,
        ),
        ...(spec.door ? [`${spec.door}:${DOOR_MOUNT}:ro`] : []),
      ],
      AutoRemove: false,
      // unset for runc, so a runc box's options stay exactly what they were
      ...(spec.runtime && spec.runtime !== DEFAULT_RUNTIME ? { Runtime: spec.runtime } : {}),
    },
  };
}
