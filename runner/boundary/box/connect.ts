import { existsSync, realpathSync } from "node:fs";
import { join } from "node:path";
import { errorMessage, RosterError } from "../../ground/errors.ts";
import { DockerEngine } from "./docker-engine.ts";
import type { BoxEngine, EngineKind } from "./engine.ts";
import { PodmanEngine } from "./podman-engine.ts";

/**
 * The one place that opens a connection to the container engine. Which engine
 * is `[engine] kind` when the config says, otherwise what the socket says: a
 * socket of Podman's (its path, or what the path links to) is Podman, any
 * other Docker. DOCKER_HOST is honoured the way both engines' CLIs honour it.
 */
export interface EngineEndpoint {
  kind: EngineKind;
  /** Human description of where we connect, for error messages. */
  describe: string;
  connect(): Promise<BoxEngine>;
}

const DOCKER_SOCKET = "/var/run/docker.sock";
const PODMAN_ROOTFUL_SOCKET = "/run/podman/podman.sock";

/** Podman's socket for this user: the system one for root, the user's own otherwise. */
function podmanSocket(env: NodeJS.ProcessEnv): string {
  if (process.getuid?.() === 0) return PODMAN_ROOTFUL_SOCKET;
  const runtimeDir = env.XDG_RUNTIME_DIR || `/run/user/${process.getuid?.() ?? 0}`;
  return join(runtimeDir, "podman", "podman.sock");
}

function socketKind(socketPath: string): EngineKind {
  let target = socketPath;
  try {
    target = realpathSync(socketPath);
  } catch {
    // not there (yet): its name is all there is to go by
  }
  return /podman/.test(target) ? "podman" : "docker";
}

/** Where the engine is, without connecting: what `box doctor` reports before it tries. */
export function engineEndpoint(
  options: { env?: NodeJS.ProcessEnv; kind?: EngineKind } = {},
): EngineEndpoint {
  const env = options.env ?? process.env;
  const host = env.DOCKER_HOST;
  if (host?.startsWith("tcp://") || host?.startsWith("http://")) {
    const url = new URL(host.replace(/^tcp:/, "http:"));
    const kind = options.kind ?? "docker";
    return {
      kind,
      describe: host,
      connect: () =>
        client(kind, host, {
          host: url.hostname,
          port: Number(url.port || 2375),
          protocol: "http",
        }),
    };
  }
  let socketPath: string;
  if (host?.startsWith("unix://")) socketPath = host.slice("unix://".length);
  else if (options.kind === "podman") socketPath = podmanSocket(env);
  else if (options.kind === "docker" || existsSync(DOCKER_SOCKET)) socketPath = DOCKER_SOCKET;
  else if (existsSync(podmanSocket(env))) socketPath = podmanSocket(env);
  else socketPath = DOCKER_SOCKET;
  const kind = options.kind ?? socketKind(socketPath);
  const describe = `unix socket ${socketPath}`;
  return { kind, describe, connect: () => client(kind, describe, { socketPath }) };
}

async function client(
  kind: EngineKind,
  describe: string,
  where: { socketPath: string } | { host: string; port: number; protocol: "http" },
): Promise<BoxEngine> {
  // loaded on first use: dockerode and its dependencies cost ~0.25 s of CPU to load,
  // which a run spends while its gateway starts, not before it
  const { default: Docker } = await import("dockerode");
  const docker = new Docker(where);
  return kind === "podman"
    ? new PodmanEngine(docker, describe)
    : new DockerEngine(docker, describe);
}

/**
 * Connects and pings; a refusal names the socket tried and how to start the
 * engine. A ping, not /version: Docker answers /version by asking containerd
 * and runc for theirs (~10 ms, on every box's path); `roster box doctor` asks it.
 */
export async function connectEngine(
  options: { env?: NodeJS.ProcessEnv; kind?: EngineKind } = {},
): Promise<BoxEngine> {
  const endpoint = engineEndpoint(options);
  const engine = await endpoint.connect();
  try {
    await engine.ping();
    return engine;
  } catch (error) {
    const start =
      endpoint.kind === "podman"
        ? "start it with `podman system service --time=0 &`"
        : "start it with `sudo dockerd &` or `sudo systemctl start docker`";
    const name = endpoint.kind === "podman" ? "Podman" : "Docker";
    throw new RosterError(
      `${name} is not reachable at ${endpoint.describe} (${shortCause(error)}); ${start}, or point DOCKER_HOST at a running engine`,
      { cause: error },
    );
  }
}

function shortCause(error: unknown): string {
  const code = (error as { code?: unknown }).code;
  return typeof code === "string" ? code : (errorMessage(error).split("\n")[0] ?? "unknown error");
}
