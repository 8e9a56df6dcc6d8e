import type Docker from "dockerode";
import { errorMessage, RosterError } from "../errors.ts";

/**
 * The one place that opens a connection to the container engine. Everything
 * else in runner/ asks this module for a client, so another backend later is a
 * new folder, not a search-and-replace.
 */

/**
 * The engine client as the rest of runner/ holds it: a handle it passes back
 * to functions of this folder, never one it calls itself, so no file outside
 * runner/box/ names Docker.
 */
export type ContainerEngine = Docker;

export interface DockerEndpoint {
  /** Human description of where we connect, for error messages. */
  describe: string;
  client: ContainerEngine;
}

/** Where dockerode will connect, honouring DOCKER_HOST the way the docker CLI does. */
export async function dockerEndpoint(
  env: NodeJS.ProcessEnv = process.env,
): Promise<DockerEndpoint> {
  // loaded on first use: dockerode and its dependencies cost ~0.25 s of CPU to load,
  // which a run spends while its gateway starts, not before it
  const { default: Docker } = await import("dockerode");
  const host = env.DOCKER_HOST;
  if (host?.startsWith("unix://")) {
    const socketPath = host.slice("unix://".length);
    return { describe: `unix socket ${socketPath}`, client: new Docker({ socketPath }) };
  }
  if (host?.startsWith("tcp://") || host?.startsWith("http://")) {
    const url = new URL(host.replace(/^tcp:/, "http:"));
    return {
      describe: `${host}`,
      client: new Docker({ host: url.hostname, port: Number(url.port || 2375), protocol: "http" }),
    };
  }
  const socketPath = "/var/run/docker.sock";
  return { describe: `unix socket ${socketPath}`, client: new Docker({ socketPath }) };
}

/**
 * Connects and pings; a refusal names the socket tried and how to start Docker.
 * A ping, not /version: the engine answers /version by asking containerd and
 * runc for theirs (~10 ms, on every box's path); `roster box doctor` asks it.
 */
export async function connectDocker(env: NodeJS.ProcessEnv = process.env): Promise<DockerEndpoint> {
  const endpoint = await dockerEndpoint(env);
  try {
    await endpoint.client.ping();
    return endpoint;
  } catch (error) {
    throw new RosterError(
      `Docker is not reachable at ${endpoint.describe} (${shortCause(error)}); start it with \`sudo dockerd &\` or \`sudo systemctl start docker\`, or point DOCKER_HOST at a running engine`,
      { cause: error },
    );
  }
}

function shortCause(error: unknown): string {
  const code = (error as { code?: unknown }).code;
  return typeof code === "string" ? code : (errorMessage(error).split("\n")[0] ?? "unknown error");
}

/** True when an image (name:tag or id) exists locally. */
export async function imageExists(docker: Docker, name: string): Promise<boolean> {
  return (await imageId(docker, name)) !== undefined;
}

/** A local image's id, or undefined when there is no such image. */
export async function imageId(docker: Docker, name: string): Promise<string | undefined> {
  return (await imageFacts(docker, name))?.id;
}

/** An image's id and its labels (one inspect), or undefined when it is missing. */
export async function imageFacts(
  docker: Docker,
  name: string,
): Promise<{ id: string; labels: Record<string, string> } | undefined> {
  try {
    const info = await docker.getImage(name).inspect();
    return { id: info.Id, labels: info.Config?.Labels ?? {} };
  } catch (error) {
    if ((error as { statusCode?: unknown }).statusCode === 404) return undefined;
    throw error;
  }
}

/** Collects a Docker progress stream (build, pull, import) as parsed JSON messages. */
export async function followStream(
  docker: Docker,
  stream: NodeJS.ReadableStream,
  onMessage: (message: StreamMessage) => void,
): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    docker.modem.followProgress(
      stream,
      (error: Error | null) => (error ? reject(error) : resolve()),
      (event: StreamMessage) => onMessage(event),
    );
  });
}

export interface StreamMessage {
  stream?: string;
  status?: string;
  progress?: string;
  error?: string;
  errorDetail?: { message?: string };
  aux?: { ID?: string };
}
