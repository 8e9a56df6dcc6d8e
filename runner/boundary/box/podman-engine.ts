import { readFileSync } from "node:fs";
import { type IncomingMessage, request } from "node:http";
import type { Socket } from "node:net";
import type Docker from "dockerode";
import { RosterError } from "../../ground/errors.ts";
import type { BoxSpec } from "./container-spec.ts";
import { DockerBox, DockerEngine } from "./docker-engine.ts";
import type {
  EngineBox,
  EngineKind,
  EngineRuntimeEntry,
  ImageImport,
  ListedImage,
  OnMessage,
} from "./engine.ts";
import { podmanSeccompProfile } from "./podman-seccomp.ts";

/**
 * Podman behind the seam, through the Docker-compatible API that `podman
 * system service` serves (checked with Debian's Podman 4.3). Only what Podman
 * reads differently is here:
 * - Its default `nproc` and `nofile` are above what the host lets it set, and
 *   the box then fails at init with EPERM: roster sets both, within the host.
 * - A hijacked attach forwards the request's body to the box's stdin, which
 *   would put dockerode's JSON before pi's first RPC line: stdin is attached
 *   with an empty body here.
 * - `OOMKilled` stays false when the memory limit killed a box: it is not
 *   believed (undefined), and the run's owner reads an unexplained 137 itself.
 * - An import ignores its `tag`; a name:tag repo is honoured.
 * - Image tags come back qualified (`localhost/x:1`, `docker.io/library/x:1`).
 * - Its default seccomp profile lets a box unshare a user namespace with root
 *   in it (Docker's does not): boxes get a profile that closes namespaces
 *   (podman-seccomp.ts).
 * - Rootless Podman on cgroup v1 silently drops every resource limit: roster
 *   refuses to start a box there (fail closed). Rootless elsewhere keeps the
 *   runner's uid in the box (`keep-id`), so the box can use the run's folders.
 */
export class PodmanEngine extends DockerEngine {
  override readonly kind: EngineKind = "podman";
  private mode: Promise<{ rootless: boolean; cgroup: string }> | undefined;

  protected override createOptions(spec: BoxSpec): Docker.ContainerCreateOptions {
    const options = super.createOptions(spec);
    const host = options.HostConfig ?? {};
    const nproc = hostProcessLimit();
    host.Ulimits = [
      ...(host.Ulimits ?? []).filter((limit) => limit.Name !== "nproc"),
      { Name: "nproc", Soft: nproc, Hard: nproc },
    ];
    // Podman's default profile lets a box make namespaces; roster's does not
    host.SecurityOpt = [...(host.SecurityOpt ?? []), `seccomp=${podmanSeccompProfile()}`];
    return { ...options, HostConfig: host };
  }

  override async createBox(spec: BoxSpec): Promise<EngineBox> {
    const { rootless, cgroup } = await this.serviceMode();
    if (rootless && cgroup !== "v2")
      throw new RosterError(
        `rootless Podman on cgroup ${cgroup} can't enforce a box's memory, CPU, process or file limits, so roster starts no box there: use rootful Podman (its socket as root), Docker, or a host with cgroup v2 and a delegated user session`,
        { exitCode: 2 },
      );
    const options = this.createOptions(spec);
    if (rootless) options.HostConfig = { ...options.HostConfig, UsernsMode: "keep-id" };
    const container = await this.client.createContainer(options).catch((error: unknown) => {
      throw explainCreate(error);
    });
    return new PodmanBox(this.client, container);
  }

  override async version(): Promise<string | undefined> {
    const version = await this.client.version().catch(() => undefined);
    if (!version) return undefined;
    const runtime = version.Components?.find((part) => /^OCI Runtime/.test(part.Name))?.Name;
    const { rootless } = await this.serviceMode().catch(() => ({ rootless: false }));
    return `Podman ${version.Version}${rootless ? " (rootless)" : ""}${runtime ? `, ${runtime.replace(/^OCI Runtime \((.*)\)$/, "$1")}` : ""}`;
  }

  override async runtimes(): Promise<EngineRuntimeEntry[]> {
    // /info lists every runtime Podman knows a path for, installed or not, and
    // its compat API ignores a box's HostConfig.Runtime: only the runtime the
    // service was started with is one a box really gets
    const info = (await this.client.info()) as { DefaultRuntime?: string };
    return info.DefaultRuntime ? [{ name: info.DefaultRuntime }] : [];
  }

  override async importImage(source: ImageImport, onMessage: OnMessage): Promise<void> {
    const stream = await this.client.importImage(source.tar, {
      repo: `${source.repo}:${source.tag}`,
      changes: source.changes,
    });
    await this.follow(stream, onMessage);
  }

  override async listImages(label: string): Promise<ListedImage[]> {
    const images = await super.listImages(label);
    return images.map((image) => ({ ...image, tags: image.tags.map(shortTag) }));
  }

  /** Rootless or not, and the cgroup version, from Podman's own API (the compat /info hides both). */
  private serviceMode(): Promise<{ rootless: boolean; cgroup: string }> {
    this.mode ??= (async () => {
      const info = (await this.libpod("/v4.0.0/libpod/info")) as {
        host?: { security?: { rootless?: boolean }; cgroupVersion?: string };
      };
      return {
        rootless: info.host?.security?.rootless === true,
        cgroup: info.host?.cgroupVersion ?? "unknown",
      };
    })();
    return this.mode;
  }

  private libpod(path: string): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const req = request({ ...endpointOf(this.client), path, method: "GET" }, (res) => {
        readJson(res).then(resolve, reject);
      });
      req.setTimeout(10_000, () => req.destroy(new Error(`Podman did not answer ${path}`)));
      req.on("error", reject);
      req.end();
    });
  }
}

class PodmanBox extends DockerBox {
  protected override async openAttach(interactive: boolean): Promise<NodeJS.ReadWriteStream> {
    return interactive ? hijack(this.client, this.id) : super.openAttach(false);
  }

  override async oomKilled(): Promise<boolean | undefined> {
    return undefined;
  }
}

const ATTACH_TIMEOUT_MS = 30_000;

/** The attach stream both ways, opened with an empty body (Podman writes a body to stdin). */
function hijack(client: Docker, id: string): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const req = request({
      ...endpointOf(client),
      method: "POST",
      path: `/containers/${encodeURIComponent(id)}/attach?stream=1&stdin=1&stdout=1&stderr=1`,
      headers: { Connection: "Upgrade", Upgrade: "tcp", "Content-Length": "0" },
    });
    req.on("upgrade", (_res, socket, head) => {
      // the attach's wait is over: a session's stdin may then be quiet for hours
      socket.setTimeout(0);
      socket.removeAllListeners("timeout");
      if (head.length) socket.unshift(head);
      resolve(socket);
    });
    req.on("response", (res) => {
      readJson(res).then(
        (body) => reject(new Error(`attach answered ${res.statusCode}: ${JSON.stringify(body)}`)),
        reject,
      );
    });
    // an engine that never answers must not hold a run's start: the attach is
    // given up (and the box removed by the caller) after this long
    req.setTimeout(ATTACH_TIMEOUT_MS, () =>
      req.destroy(
        new Error(`Podman did not answer the attach within ${ATTACH_TIMEOUT_MS / 1000} s`),
      ),
    );
    req.on("error", reject);
    req.end();
  });
}

function endpointOf(client: Docker): { socketPath: string } | { host: string; port: number } {
  const modem = client.modem as { socketPath?: string; host?: string; port?: number };
  if (modem.socketPath) return { socketPath: modem.socketPath };
  return { host: modem.host ?? "127.0.0.1", port: Number(modem.port ?? 2375) };
}

async function readJson(res: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of res) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString("utf8");
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/**
 * The most processes a box's user may have that Podman can set: the kernel's
 * pid_max (Podman lowers its own limit to it) and this process's hard limit,
 * whichever is lower. The box's pids limit is what bounds it in practice.
 */
function hostProcessLimit(): number {
  const pidMax = Number(readOr("/proc/sys/kernel/pid_max", "32768").trim()) || 32768;
  const hard = /^Max processes\s+\S+\s+(\S+)/m.exec(readOr("/proc/self/limits", ""))?.[1];
  const own = hard && hard !== "unlimited" ? Number(hard) : Number.POSITIVE_INFINITY;
  return Math.min(pidMax, own);
}

function readOr(path: string, fallback: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return fallback;
  }
}

function shortTag(tag: string): string {
  return tag.replace(/^(localhost|docker\.io\/library|docker\.io)\//, "");
}

/** Create errors Podman words its own way, said in roster's. */
function explainCreate(error: unknown): unknown {
  const message = error instanceof Error ? error.message : String(error);
  if (/catatonit|container-init binary not found/.test(message))
    return new RosterError(
      "Podman has no init binary for boxes (catatonit): install it (`apt-get install catatonit`)",
      { cause: error },
    );
  return error;
}
