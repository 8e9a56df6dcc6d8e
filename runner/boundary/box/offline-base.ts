import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { chmod, mkdir, mkdtemp, readdir, rename, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { RosterError } from "../../ground/errors.ts";
import { PROJECT_ROOT } from "../../ground/version.ts";
import { baseSourcesFile, debianSources } from "./debian-sources.ts";
import type { BoxEngine } from "./engine.ts";
import { onPath, runHostProgram } from "./host-program.ts";
import { LABELS, OFFLINE_BASE } from "./layout.ts";
import type { Progress } from "./progress.ts";

/**
 * A base image for hosts that reach Debian's mirror and the npm registry but no
 * container registry: debootstrap bookworm, put Node 24 in it from the npm
 * package that ships the binary, and import the tree into the engine. The box
 * Dockerfile then builds on it exactly as it would on node:24-bookworm-slim.
 */

/** Pinned so that a rebuilt base is the same base. */
export const NODE_PACKAGE_VERSION = "24.22.3";
export const NPM_PACKAGE_VERSION = "11.19.1";

/** The files whose code makes the base: a change to either is a new recipe. */
const RECIPE_FILES = [
  "runner/boundary/box/offline-base.ts",
  "runner/boundary/box/debian-sources.ts",
];

/**
 * The hash of everything the base is made from: this recipe's code, the
 * pinned Node and npm, and the machine's architecture. The base carries it
 * as a label (LABELS.baseRecipe); a cached base with another (or none) was
 * made some other way and is made again (image-build.ts), so the slow path —
 * debootstrap, Node from npm — runs whenever its inputs change, and only then.
 */
export function baseRecipeHash(root = PROJECT_ROOT): string {
  const hash = createHash("sha256");
  hash.update(`${nodePackageName()}\0npm@${NPM_PACKAGE_VERSION}\0`);
  for (const file of RECIPE_FILES) {
    hash.update(`${file}\0`);
    hash.update(readFileSync(join(root, file)));
  }
  return `sha256:${hash.digest("hex")}`;
}

function nodePackageName(): string {
  const arch = process.arch === "arm64" ? "arm64" : "x64";
  return `node-linux-${arch}@${NODE_PACKAGE_VERSION}`;
}

class BaseStepError extends RosterError {
  constructor(step: string, reason: string, tail: string[] = []) {
    const detail = tail.length ? `\n  ${tail.slice(-8).join("\n  ")}` : "";
    super(
      `building the base image failed at step "${step}": ${reason}; the previous image is kept${detail}`,
    );
  }
}

export async function buildOfflineBase(
  engine: BoxEngine,
  progress: Progress,
  env: NodeJS.ProcessEnv = process.env,
): Promise<string> {
  if (process.getuid?.() !== 0) {
    throw new BaseStepError("debootstrap", "building a base from Debian packages needs root");
  }
  if (!(await onPath("debootstrap"))) {
    throw new BaseStepError(
      "debootstrap",
      "debootstrap is not installed (apt-get install debootstrap)",
    );
  }
  const sources = debianSources(env);
  if (!sources) {
    throw new BaseStepError(
      "debootstrap",
      "no Debian mirror found in the host's apt sources; set ROSTER_DEBIAN_MIRROR",
    );
  }

  const work = await mkdtemp(join(tmpdir(), "roster-base-"));
  const rootfs = join(work, "rootfs");
  try {
    progress.step(`base: debootstrap bookworm (minbase) from the host's Debian mirror`);
    const boot = await runHostProgram(
      "debootstrap",
      ["--variant=minbase", "bookworm", rootfs, sources.mirror],
      { onLine: (line) => progress.detail(line) },
    );
    if (boot.code !== 0) {
      throw new BaseStepError("debootstrap", `debootstrap exited ${boot.code}`, boot.tail);
    }
    await rm(join(rootfs, "etc/apt/sources.list"), { force: true });
    await mkdir(join(rootfs, "etc/apt/sources.list.d"), { recursive: true });
    await writeFile(
      join(rootfs, "etc/apt/sources.list.d/debian.sources"),
      baseSourcesFile(sources),
    );

    progress.step(
      `base: Node ${NODE_PACKAGE_VERSION} and npm ${NPM_PACKAGE_VERSION} from npm packages`,
    );
    const nodePkg = await unpackNpmPackage(work, nodePackageName(), "node");
    await rename(join(nodePkg, "bin/node"), join(rootfs, "usr/local/bin/node"));
    await chmod(join(rootfs, "usr/local/bin/node"), 0o755);
    const npmPkg = await unpackNpmPackage(work, `npm@${NPM_PACKAGE_VERSION}`, "npm");
    await mkdir(join(rootfs, "usr/local/lib/node_modules"), { recursive: true });
    await rename(npmPkg, join(rootfs, "usr/local/lib/node_modules/npm"));
    await symlink("../lib/node_modules/npm/bin/npm-cli.js", join(rootfs, "usr/local/bin/npm"));
    await symlink("../lib/node_modules/npm/bin/npx-cli.js", join(rootfs, "usr/local/bin/npx"));
    const check = await runHostProgram("chroot", [rootfs, "/usr/local/bin/node", "--version"]);
    if (check.code !== 0) {
      throw new BaseStepError("node", "the Node binary does not run in the base", check.tail);
    }

    progress.step("base: cleaning apt lists and package files");
    for (const dir of ["var/lib/apt/lists", "var/cache/apt/archives", "var/log"]) {
      await emptyDir(join(rootfs, dir));
    }
    await rm(join(rootfs, "var/cache/apt/pkgcache.bin"), { force: true });
    await rm(join(rootfs, "var/cache/apt/srcpkgcache.bin"), { force: true });

    progress.step(`base: importing the tree as ${OFFLINE_BASE}`);
    await importTree(engine, rootfs, progress, OFFLINE_BASE, {
      [LABELS.baseRecipe]: baseRecipeHash(),
    });
    return OFFLINE_BASE;
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

async function emptyDir(dir: string): Promise<void> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return;
  }
  for (const name of names) {
    if (name === "partial" || name === "lock") continue;
    await rm(join(dir, name), { recursive: true, force: true });
  }
}

/** `npm pack` a package with the host's npm (and its registry settings), then unpack it. */
async function unpackNpmPackage(work: string, spec: string, step: string): Promise<string> {
  const into = join(work, `pkg-${step}`);
  await mkdir(into, { recursive: true });
  const pack = await runHostProgram("npm", ["pack", spec, "--silent", "--pack-destination", into]);
  const tarball = pack.tail.at(-1);
  if (pack.code !== 0 || !tarball) {
    throw new BaseStepError(step, `npm pack ${spec} failed`, pack.tail);
  }
  const untar = await runHostProgram("tar", ["-xzf", join(into, tarball), "-C", into]);
  if (untar.code !== 0) throw new BaseStepError(step, `unpacking ${tarball} failed`, untar.tail);
  return join(into, "package");
}

/**
 * Imports a root file system as an image (`name`, the offline base unless a
 * test names another), with the environment and command a base needs.
 */
export async function importTree(
  engine: BoxEngine,
  rootfs: string,
  progress: Progress,
  name = OFFLINE_BASE,
  labels: Record<string, string> = {},
): Promise<void> {
  const [repo, tag] = name.split(":");
  const tar = spawn("tar", ["--numeric-owner", "-C", rootfs, "-c", "."], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let tarError = "";
  tar.stderr.on("data", (chunk: Buffer) => {
    tarError += chunk.toString();
  });
  let failure: string | undefined;
  await engine.importImage(
    {
      tar: tar.stdout,
      repo: repo ?? name,
      tag: tag ?? "latest",
      changes: [
        "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "ENV LANG=C.UTF-8",
        'CMD ["node"]',
        ...Object.entries(labels).map(([key, value]) => `LABEL ${key}=${value}`),
      ],
    },
    (message) => {
      if (message.error) failure = message.error;
      else if (message.status) progress.detail(message.status);
    },
  );
  const code = await new Promise<number>((resolve) => {
    if (tar.exitCode !== null) resolve(tar.exitCode);
    else tar.on("close", (status) => resolve(status ?? 1));
  });
  if (failure || code !== 0) {
    throw new BaseStepError("import", failure ?? `tar exited ${code}: ${tarError.trim()}`);
  }
}
