/**
 * Builds the box image: picks its base (the configured image, else the
 * Debian-built one, built when missing or made from another recipe),
 * assembles the build context (extensions, engine, Dockerfile) and has the
 * engine build it, labelled with the hash of its sources so a run can tell a
 * current image from a stale one (current-image.ts).
 */
import { rm } from "node:fs/promises";
import { errorMessage, RosterError } from "../../ground/errors.ts";
import { ENGINE_PIN } from "../../ground/version.ts";
import { assembleContext, type ContextSources } from "./build-context.ts";
import { buildReader } from "./build-output.ts";
import { type BoxEngine, InUse } from "./engine.ts";
import { BOX_CONTRACT, BOX_IMAGE, DEFAULT_BASE, LABELS, OFFLINE_BASE } from "./layout.ts";
import { baseRecipeHash, buildOfflineBase } from "./offline-base.ts";
import type { Progress } from "./progress.ts";
import { sourceHash } from "./source-hash.ts";

export interface BuildOptions extends ContextSources {
  engine: BoxEngine;
  progress: Progress;
  /** The base the Dockerfile builds FROM; a registry image by default. */
  base?: string;
  tag?: string;
  /** Rebuild the Debian-built base even if one is cached. */
  rebuildBase?: boolean;
  /** Skip the layer cache. */
  noCache?: boolean;
}

export interface BuiltImage {
  tag: string;
  id: string;
  sizeBytes: number;
  engineVersion: string;
  extensions: string[];
  /** The hash of the sources it was built from (its org.roster.source label). */
  source: string;
  base: string;
  seconds: number;
}

/**
 * Picks the base: the configured image if present or pullable; otherwise the
 * cached Debian-built base; otherwise builds that base. Fails closed with the
 * failing step named.
 */
export async function resolveBase(options: BuildOptions): Promise<string> {
  const { engine, progress } = options;
  const configured = options.base ?? DEFAULT_BASE;
  if (!options.rebuildBase) {
    if (await engine.image(configured)) return configured;
    progress.step(`base: pulling ${configured}`);
    try {
      let failure: string | undefined;
      await engine.pullImage(configured, (message) => {
        if (message.error) failure = message.error;
      });
      if (failure) throw new Error(failure);
      return configured;
    } catch (error) {
      progress.note(
        `base: ${configured} can't be pulled (${errorMessage(error).split("\n")[0]}); using a base built from Debian packages`,
      );
    }
    const cached = await engine.image(OFFLINE_BASE);
    if (cached?.labels[LABELS.baseRecipe] === baseRecipeHash()) {
      progress.note(`base: using the cached ${OFFLINE_BASE} (--rebuild-base makes a new one)`);
      return OFFLINE_BASE;
    }
    if (cached)
      progress.note(
        `base: the cached ${OFFLINE_BASE} was made by another recipe than this roster's (runner/boundary/box/offline-base.ts, its Node pin); making it again`,
      );
  }
  return buildOfflineBase(engine, progress, options.env);
}

export async function buildBoxImage(options: BuildOptions): Promise<BuiltImage> {
  const { engine, progress } = options;
  const startedAt = Date.now();
  const tag = options.tag ?? BOX_IMAGE;
  const base = await resolveBase(options);
  const context = await assembleContext(options);
  const source = await sourceHash(options);
  const previous = await engine.image(tag);
  try {
    progress.step(`image: building ${tag} on ${base} (pi ${ENGINE_PIN})`);
    const reader = buildReader(progress, "image");
    await engine.buildImage(
      {
        context: context.dir,
        files: context.files,
        tag,
        noCache: options.noCache ?? false,
        buildArgs: {
          BASE: base,
          ENGINE_VERSION: ENGINE_PIN,
          EXTENSIONS: context.extensions.join(","),
          BOX_CONTRACT,
          SOURCE_HASH: source,
          TAG: tag,
        },
      },
      reader.onMessage,
    );
    const { failure, output } = reader.finish();
    if (failure) {
      throw new RosterError(
        `building ${tag} failed: ${failure}; the previous image is kept\n  ${output.slice(-15).join("\n  ")}`,
      );
    }
  } finally {
    await rm(context.dir, { recursive: true, force: true });
  }
  const info = await engine.image(tag);
  if (!info)
    throw new RosterError(`building ${tag} reported no error, but the engine has no such image`);
  if (previous && previous.id !== info.id) await dropSuperseded(options, tag, previous.id);
  const labels = info.labels;
  return {
    tag,
    id: info.id,
    sizeBytes: info.sizeBytes,
    engineVersion: labels[LABELS.engineVersion] ?? "unknown",
    extensions: splitList(labels[LABELS.extensions]),
    source: labels[LABELS.source] ?? "unknown",
    base,
    seconds: (Date.now() - startedAt) / 1000,
  };
}

/**
 * The image the tag named before this build, now named by nothing: removed,
 * or every rebuild (a dropped-in tool, a changed engine pin) would leave its
 * layers on the host's disk for good. Without force, the engine keeps it
 * while a box runs from it, an image was built on it (a worker's toolchain)
 * or another tag names it; it is then kept, and said so.
 */
async function dropSuperseded(options: BuildOptions, tag: string, id: string): Promise<void> {
  const short = id.replace(/^sha256:/, "").slice(0, 12);
  try {
    await options.engine.removeImage(id);
    options.progress.note(`image: removed the ${tag} it replaced (${short})`);
  } catch (error) {
    options.progress.note(
      `image: kept the ${tag} it replaced (${short}): ${error instanceof InUse ? "a box or another image uses it" : errorMessage(error)}`,
    );
  }
}

export function splitList(value: string | undefined): string[] {
  return value ? value.split(",").filter(Boolean) : [];
}

export function formatBytes(bytes: number): string {
  if (bytes >= 1e9) return `${(bytes / 1e9).toFixed(2)} GB`;
  return `${Math.round(bytes / 1e6)} MB`;
}
