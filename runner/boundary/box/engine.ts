import type { Readable } from "node:stream";
import type { EngineKind } from "../../ground/config/config-schema.ts";
import type { BoxSpec } from "./container-spec.ts";

/**
 * The seam between roster and a container engine: everything roster asks of
 * one, in roster's own terms. Docker (docker-engine.ts) is one implementation
 * and Podman (podman-engine.ts) another; nothing outside runner/boundary/box/ knows
 * which runs, and a new engine (a Kubernetes one: docs/kubernetes.md) is a new
 * class here, not a search through the code.
 *
 * What a box must be (no network, read-only root, no capabilities, the door)
 * is said once, as a BoxSpec; each engine turns it into its own options and
 * may only add to the hardening, never drop any of it.
 */
export type { EngineKind };

export interface EngineRuntimeEntry {
  name: string;
  path?: string;
  runtimeArgs?: string[];
}

export interface ImageFacts {
  id: string;
  labels: Record<string, string>;
  sizeBytes: number;
  created: string;
}

/** One progress message of a build, pull or import, in the engine's JSON stream format. */
export interface StreamMessage {
  stream?: string;
  status?: string;
  progress?: string;
  error?: string;
  errorDetail?: { message?: string };
  aux?: { ID?: string };
}

export type OnMessage = (message: StreamMessage) => void;

export interface ImageBuild {
  /** A folder holding the build context, and the files of it that are sent. */
  context: string;
  files: string[];
  tag: string;
  labels?: Record<string, string>;
  buildArgs?: Record<string, string>;
  noCache?: boolean;
}

export interface ImageImport {
  /** A tar stream of a root file system. */
  tar: Readable;
  repo: string;
  tag: string;
  /** Dockerfile instructions applied to the imported image (ENV, CMD). */
  changes: string[];
}

export interface ListedImage {
  id: string;
  tags: string[];
  sizeBytes: number;
}

export interface ListedBox {
  id: string;
  labels: Record<string, string>;
}

export interface ListedVolume {
  name: string;
  /** Bytes used, when the engine knows (−1 or 0 when it does not). */
  sizeBytes: number;
}

/** A created box: the steps of one box's life, in the order lifecycle.ts takes them. */
export interface EngineBox {
  readonly id: string;
  /**
   * Connects to the box's output (and its stdin, when interactive) before it
   * starts. Returns the raw stream: writable for stdin, and it ends or closes
   * when the box's output ends. An engine that can attach only to a running
   * box (a Kubernetes Pod) starts it held, and start() releases it.
   */
  attach(options: {
    interactive: boolean;
    onStdout: (chunk: Buffer) => void;
    onStderr: (chunk: Buffer) => void;
  }): Promise<NodeJS.ReadWriteStream>;
  start(): Promise<void>;
  /** Resolves with the exit status once the box has exited. */
  wait(): Promise<number>;
  kill(): Promise<void>;
  /** Whether the kernel's OOM killer ended it; undefined when the engine can't say. */
  oomKilled(): Promise<boolean | undefined>;
  /** Asks the engine to remove it (forcefully); never throws. */
  remove(): Promise<void>;
  /** False once the engine no longer lists it. */
  exists(): Promise<boolean>;
}

export interface BoxEngine {
  readonly kind: EngineKind;
  /** Where roster connects, for messages: "unix socket /var/run/docker.sock". */
  readonly describe: string;
  ping(): Promise<void>;
  /** The engine's name and version for `box doctor`, e.g. "Docker 20.10.24". */
  version(): Promise<string | undefined>;
  /**
   * The OCI runtimes the engine can start a box under (runc, runsc, ...), with
   * their flags; on a cluster, the handlers of its RuntimeClasses.
   */
  runtimes(): Promise<EngineRuntimeEntry[]>;

  image(name: string): Promise<ImageFacts | undefined>;
  buildImage(build: ImageBuild, onMessage: OnMessage): Promise<void>;
  pullImage(name: string, onMessage: OnMessage): Promise<void>;
  importImage(source: ImageImport, onMessage: OnMessage): Promise<void>;
  /** Images carrying this label (`key=value`). */
  listImages(label: string): Promise<ListedImage[]>;
  /** Throws with `inUse` set when a box still runs from it. */
  removeImage(id: string): Promise<void>;

  createBox(spec: BoxSpec): Promise<EngineBox>;
  /**
   * Boxes carrying this label (key or `key=value`), running or not. Whether
   * one is an orphan is orphans.ts's test of the runner pid label, which
   * holds on one host only (a cluster needs a lease: docs/kubernetes.md).
   */
  listBoxes(label: string): Promise<ListedBox[]>;
  removeBox(id: string): Promise<void>;
  /** The memory a running box uses now, in bytes (undefined if the engine can't say). */
  boxMemory(id: string): Promise<number | undefined>;

  /** Creates the volume unless it exists. */
  ensureVolume(name: string, labels: Record<string, string>): Promise<void>;
  /**
   * Where the volume's bytes are on this host, when this process can see them;
   * undefined when they are on another machine (a cluster's node).
   */
  volumePath(name: string): Promise<string | undefined>;
  listVolumes(label: string): Promise<ListedVolume[]>;
  /** Throws with `inUse` set when a box still mounts it. */
  removeVolume(name: string): Promise<void>;
}

/** A removal the engine refused because a box still uses the image or volume. */
export class InUse extends Error {
  readonly inUse = true;
}
