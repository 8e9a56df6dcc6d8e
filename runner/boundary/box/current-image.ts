import { createHash } from "node:crypto";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { RosterError } from "../../ground/errors.ts";
import { LockBusy, withFileLock } from "../../ground/files/file-lock.ts";
import type { ContextSources } from "./build-context.ts";
import type { BoxEngine } from "./engine.ts";
import { buildBoxImage } from "./image-build.ts";
import { BOX_CONTRACT, BOX_IMAGE, LABELS } from "./layout.ts";
import { consoleProgress, type Progress } from "./progress.ts";
import { sourceHash } from "./source-hash.ts";

/**
 * The box image a run starts from, kept current before every box. roster's own
 * image (roster-box:latest, or any image roster built under the name it now
 * carries) is rebuilt when it is missing, was built for another box contract,
 * or was built from other sources than the ones on disk now (its
 * org.roster.source label against box/source-hash.ts): dropping a tool into
 * extensions/ is enough, the next run bakes it, with the build's progress on
 * stderr. Any other image is the user's: only its contract is checked, and it
 * is never rebuilt.
 *
 * Builds of one tag are serialised across processes by a lock file: two runs
 * starting at once build once, and the second finds the image current.
 */
export interface CurrentImageOptions extends ContextSources {
  engine: BoxEngine;
  image: string;
  note: (text: string) => void;
  /** Where the build shows its steps; stderr by default. */
  progress?: Progress;
  /** How long to wait for another process's build of the same tag. */
  waitMs?: number;
}

/** The image's id, after rebuilding it when it is roster's and not current. */
export async function ensureCurrentImage(options: CurrentImageOptions): Promise<string> {
  const { engine, image, note } = options;
  const facts = await engine.image(image);
  const owned = image === BOX_IMAGE || facts?.labels[LABELS.tag] === image;
  if (!owned) {
    const contract = facts?.labels[LABELS.box];
    if (facts && contract === BOX_CONTRACT) return facts.id;
    if (!facts) throw refuse(`the box image ${image} is missing: build or pull it first`);
    throw refuse(
      `the box image ${image} was built for box contract ${contract ?? "(none)"} and roster needs ${BOX_CONTRACT}: rebuild it FROM a current ${BOX_IMAGE} (roster box build)`,
    );
  }
  const wanted = await sourceHash(options);
  if (facts && staleness(facts.labels, wanted) === undefined) return facts.id;
  return withBuildLock(image, options, async () => {
    // another process may have built it while this one waited
    const now = await engine.image(image);
    const why = now ? staleness(now.labels, wanted) : `the box image ${image} is missing`;
    if (now && why === undefined) return now.id;
    note(`${why}; rebuilding it`);
    const built = await buildBoxImage({
      engine,
      progress: options.progress ?? consoleProgress(),
      tag: image,
      // the base it was built on before, when it names one
      ...(now?.labels[LABELS.baseImage] ? { base: now.labels[LABELS.baseImage] } : {}),
      ...sourcesOf(options),
    });
    note(`rebuilt ${image} in ${built.seconds.toFixed(1)}s`);
    return built.id;
  });
}

/** Why an image of roster's is not current, or undefined when it is. */
function staleness(labels: Record<string, string>, wanted: string): string | undefined {
  const contract = labels[LABELS.box];
  if (contract !== BOX_CONTRACT)
    return `the box image was built for an older roster (box contract ${contract ?? "(none)"}, now ${BOX_CONTRACT})`;
  const source = labels[LABELS.source];
  if (!source || source === "unknown")
    return "the box image records no hash of what it was built from";
  if (source !== wanted)
    return "extensions/, box/ or engine/ changed since the box image was built";
  return undefined;
}

function sourcesOf(options: ContextSources): ContextSources {
  return {
    ...(options.projectRoot ? { projectRoot: options.projectRoot } : {}),
    ...(options.extensionsDir ? { extensionsDir: options.extensionsDir } : {}),
    ...(options.env ? { env: options.env } : {}),
  };
}

/**
 * Holds the host-wide lock for building one tag (Docker's images are the
 * host's, whichever deployment asks), waiting for another holder and saying so
 * once.
 */
async function withBuildLock<T>(
  image: string,
  options: CurrentImageOptions,
  body: () => Promise<T>,
): Promise<T> {
  const key = createHash("sha256").update(image).digest("hex").slice(0, 16);
  const lock = join(tmpdir(), `roster-image-build-${key}.lock`);
  const until = Date.now() + (options.waitMs ?? 30 * 60_000);
  let told = false;
  for (;;) {
    try {
      return await withFileLock(lock, `the box image ${image}`, body);
    } catch (error) {
      if (!(error instanceof LockBusy)) throw error;
      if (Date.now() > until)
        throw new RosterError(
          `the box image ${image} is still being built by process ${error.holder}; try again when it is done`,
        );
      if (!told) options.note(`waiting for process ${error.holder}, which is building ${image}`);
      told = true;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
}

function refuse(message: string): RosterError {
  return new RosterError(message, { exitCode: 2 });
}
