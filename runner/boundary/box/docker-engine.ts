import { PassThrough } from "node:stream";
import type Docker from "dockerode";
import { type BoxSpec, containerCreateOptions } from "./container-spec.ts";
import {
  type BoxEngine,
  type EngineBox,
  type EngineKind,
  type EngineRuntimeEntry,
  type ImageBuild,
  type ImageFacts,
  type ImageImport,
  InUse,
  type ListedBox,
  type ListedImage,
  type ListedVolume,
  type OnMessage,
} from "./engine.ts";

/**
 * The Docker engine behind the seam, through its API (dockerode). Podman's
 * Docker-compatible API is close enough that podman-engine.ts extends this
 * class and overrides only where Podman differs.
 */
export class DockerEngine implements BoxEngine {
  readonly kind: EngineKind = "docker";

  constructor(
    readonly client: Docker,
    readonly describe: string,
  ) {}

  /** The engine's create options for a box; subclasses adjust what their engine reads differently. */
  protected createOptions(spec: BoxSpec): Docker.ContainerCreateOptions {
    return containerCreateOptions(spec);
  }

  async ping(): Promise<void> {
    await this.client.ping();
  }

  async version(): Promise<string | undefined> {
    const version = await this.client.version().catch(() => undefined);
    return version ? `Docker ${version.Version}` : undefined;
  }

  async runtimes(): Promise<EngineRuntimeEntry[]> {
    const info = (await this.client.info()) as {
      Runtimes?: Record<string, { path?: string; runtimeArgs?: string[] }>;
    };
    return Object.entries(info.Runtimes ?? {}).map(([name, entry]) => ({
      name,
      ...(entry.path ? { path: entry.path } : {}),
      ...(entry.runtimeArgs ? { runtimeArgs: entry.runtimeArgs } : {}),
    }));
  }

  async image(name: string): Promise<ImageFacts | undefined> {
    try {
      const info = await this.client.getImage(name).inspect();
      return {
        id: info.Id,
        labels: info.Config?.Labels ?? {},
        sizeBytes: info.Size,
        created: info.Created,
      };
    } catch (error) {
      if (statusOf(error) === 404) return undefined;
      throw error;
    }
  }

  async buildImage(build: ImageBuild, onMessage: OnMessage): Promise<void> {
    const stream = await this.client.buildImage(
      { context: build.context, src: build.files },
      {
        t: build.tag,
        forcerm: true,
        nocache: build.noCache ?? false,
        ...(build.labels ? { labels: build.labels } : {}),
        ...(build.buildArgs ? { buildargs: build.buildArgs } : {}),
      },
    );
    await this.follow(stream, onMessage);
  }

  async pullImage(name: string, onMessage: OnMessage): Promise<void> {
    await this.follow(await this.client.pull(name), onMessage);
  }

  async importImage(source: ImageImport, onMessage: OnMessage): Promise<void> {
    const stream = await this.client.importImage(source.tar, {
      repo: source.repo,
      tag: source.tag,
      changes: source.changes,
    });
    await this.follow(stream, onMessage);
  }

  async listImages(label: string): Promise<ListedImage[]> {
    const images = await this.client.listImages({ filters: { label: [label] } });
    return images.map((image) => ({
      id: image.Id,
      tags: (image.RepoTags ?? []).filter((tag) => tag !== "<none>:<none>"),
      sizeBytes: image.Size,
    }));
  }

  async removeImage(id: string): Promise<void> {
    await this.client
      .getImage(id)
      .remove()
      .catch((error: unknown) => rethrowInUse(error, "an image a box runs from"));
  }

  async createBox(spec: BoxSpec): Promise<EngineBox> {
    const container = await this.client.createContainer(this.createOptions(spec));
    return new DockerBox(this.client, container);
  }

  async listBoxes(label: string): Promise<ListedBox[]> {
    const containers = await this.client.listContainers({ all: true, filters: { label: [label] } });
    return containers.map((info) => ({ id: info.Id, labels: info.Labels ?? {} }));
  }

  async removeBox(id: string): Promise<void> {
    await this.client
      .getContainer(id)
      .remove({ force: true })
      .catch(() => undefined);
  }

  async boxMemory(id: string): Promise<number | undefined> {
    const stats = (await this.client
      .getContainer(id)
      // one sample, now: without one-shot the engine waits for a second to compare
      .stats({ stream: false, "one-shot": true } as { stream: false })
      .catch(() => undefined)) as { memory_stats?: { usage?: number } } | undefined;
    return stats?.memory_stats?.usage;
  }

  async ensureVolume(name: string, labels: Record<string, string>): Promise<void> {
    // Docker answers an existing name with that volume
    await this.client.createVolume({ Name: name, Labels: labels });
  }

  async volumePath(name: string): Promise<string | undefined> {
    try {
      const { Mountpoint } = (await this.client.getVolume(name).inspect()) as {
        Mountpoint?: string;
      };
      return Mountpoint || undefined;
    } catch {
      return undefined;
    }
  }

  async listVolumes(label: string): Promise<ListedVolume[]> {
    const usage = await this.client.df().catch(() => undefined);
    const sizes = new Map<string, number>(
      ((usage?.Volumes ?? []) as { Name: string; UsageData?: { Size?: number } }[]).map((v) => [
        v.Name,
        Math.max(0, v.UsageData?.Size ?? 0),
      ]),
    );
    const { Volumes: volumes } = await this.client.listVolumes({ filters: { label: [label] } });
    return (volumes ?? []).map((volume) => ({
      name: volume.Name,
      sizeBytes: sizes.get(volume.Name) ?? 0,
    }));
  }

  async removeVolume(name: string): Promise<void> {
    await this.client
      .getVolume(name)
      .remove()
      .catch((error: unknown) => rethrowInUse(error, "a volume a box mounts"));
  }

  /** Reads a build, pull or import stream to its end, message by message. */
  protected async follow(stream: NodeJS.ReadableStream, onMessage: OnMessage): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      this.client.modem.followProgress(
        stream,
        (error: Error | null) => (error ? reject(error) : resolve()),
        onMessage,
      );
    });
  }
}

/** A box of the Docker API; Podman's boxes are these with a few steps of their own. */
export class DockerBox implements EngineBox {
  constructor(
    protected readonly client: Docker,
    protected readonly container: Docker.Container,
  ) {}

  get id(): string {
    return this.container.id;
  }

  async attach(options: {
    interactive: boolean;
    onStdout: (chunk: Buffer) => void;
    onStderr: (chunk: Buffer) => void;
  }): Promise<NodeJS.ReadWriteStream> {
    const stream = await this.openAttach(options.interactive);
    const stdout = new PassThrough();
    const stderr = new PassThrough();
    stdout.on("data", options.onStdout);
    stderr.on("data", options.onStderr);
    this.client.modem.demuxStream(stream, stdout, stderr);
    // a write after the box is gone must not become an unhandled 'error'
    stream.on("error", () => undefined);
    return stream;
  }

  /** The raw attach stream: hijacked when interactive, a socket both ways (stdin goes out on it). */
  protected async openAttach(interactive: boolean): Promise<NodeJS.ReadWriteStream> {
    return (await this.container.attach({
      stream: true,
      stdout: true,
      stderr: true,
      ...(interactive ? { stdin: true, hijack: true } : {}),
    })) as NodeJS.ReadWriteStream;
  }

  async start(): Promise<void> {
    await this.container.start();
  }

  async wait(): Promise<number> {
    const result = (await this.container.wait()) as { StatusCode?: number };
    return result.StatusCode ?? 1;
  }

  async kill(): Promise<void> {
    await this.container.kill().catch(() => undefined);
  }

  async oomKilled(): Promise<boolean | undefined> {
    const info = await this.container.inspect().catch(() => undefined);
    return info ? info.State?.OOMKilled === true : undefined;
  }

  async remove(): Promise<void> {
    await this.container.remove({ force: true }).catch(() => undefined);
  }

  async exists(): Promise<boolean> {
    return this.container.inspect().then(
      () => true,
      (error: unknown) => statusOf(error) !== 404,
    );
  }
}

function statusOf(error: unknown): unknown {
  return (error as { statusCode?: unknown }).statusCode;
}

function rethrowInUse(error: unknown, what: string): never {
  if (statusOf(error) === 409) throw new InUse(`${what} is in use`, { cause: error });
  throw error;
}
