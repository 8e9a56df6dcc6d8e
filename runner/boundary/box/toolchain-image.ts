import { createHash } from "node:crypto";
import { copyFile, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Toolchain, toolchainIsEmpty } from "../../ground/config/toolchain-schema.ts";
import { RosterError } from "../../ground/errors.ts";
import { hostExtraCa } from "./build-context.ts";
import { buildReader } from "./build-output.ts";
import type { BoxEngine } from "./engine.ts";
import type { Progress } from "./progress.ts";

/**
 * A worker's declared toolchain as an image of its own, built FROM the box
 * image: `roster-box-<worker>:<hash>`, where the hash covers the base image's
 * id (its content digest), the declaration and the recipe. A rebuilt box
 * image, a changed declaration or a roster that installs differently is a new tag, built before the run that needs it; while
 * neither changes the tag exists and is reused as it is. Docker tags an image
 * only once every step succeeded, so a failed build leaves no tag behind and
 * no run ever starts on half of one.
 */
export const TOOLCHAIN_LABEL = "org.roster.toolchain";
export const TOOLCHAIN_DEPLOYMENT_LABEL = "org.roster.toolchain.deployment";

export interface ToolchainImage {
  tag: string;
  built: boolean;
  seconds: number;
}

/** The declaration in one order, so listing the same packages differently is the same image. */
const sorted = (toolchain: Toolchain): Toolchain => ({
  ...toolchain,
  apt: [...toolchain.apt].sort(),
  npm: [...toolchain.npm].sort(),
  pip: [...toolchain.pip].sort(),
});

/** Named by the recipe itself: the base image's id, the packages and how roster installs them. */
export function toolchainTag(
  worker: string,
  baseId: string,
  toolchain: Toolchain,
  wheels: Wheel[] = [],
): string {
  const hash = createHash("sha256")
    .update(toolchainDockerfile(baseId, worker, sorted(toolchain), wheels))
    .digest("hex")
    .slice(0, 16);
  return `roster-box-${worker}:${hash}`;
}

const quote = (names: string[]) => names.map((name) => `'${name}'`).join(" ");

/** The Dockerfile: one layer per ecosystem, then the same setuid sweep the box image ends with. */
export function toolchainDockerfile(
  baseId: string,
  worker: string,
  toolchain: Toolchain,
  wheels: Wheel[] = [],
): string {
  const lines = [
    `FROM ${baseId}`,
    "USER root",
    'SHELL ["/bin/bash", "-o", "pipefail", "-c"]',
    "ENV DEBIAN_FRONTEND=noninteractive",
    // the host's CA certificates, for registries reached through a TLS-intercepting proxy
    "COPY build-ca.crt /tmp/roster-build-ca.crt",
  ];
  const ca =
    "if [ -s /tmp/roster-build-ca.crt ]; then export NODE_EXTRA_CA_CERTS=/tmp/roster-build-ca.crt PIP_CERT=/tmp/roster-build-ca.crt; fi;";
  if (toolchain.apt.length)
    lines.push(
      `RUN apt-get update --error-on=any && apt-get install -y --no-install-recommends ${quote(toolchain.apt)} && apt-get clean && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin`,
    );
  if (toolchain.npm.length)
    lines.push(
      // into /usr/local, not the image's NPM_CONFIG_PREFIX under $HOME: a run mounts its own $HOME there
      `RUN ${ca} npm install -g --prefix /usr/local --no-audit --no-fund --loglevel=error ${quote(toolchain.npm)} && rm -rf /root/.npm`,
    );
  if (wheels.length) {
    // each wheel by name and content, so a changed wheel is a new image
    for (const wheel of wheels) lines.push(`# wheel ${wheel.name} ${wheel.sha256}`);
    lines.push("COPY wheels/ /tmp/roster-wheels/");
  }
  const findLinks = wheels.length
    ? "--find-links /tmp/roster-wheels --retries 0 --timeout 10 "
    : "";
  if (toolchain.pip.length)
    lines.push(
      // as root into the system's site (/usr/local), never a user site under $HOME
      `RUN ${ca} PIP_USER=0 pip install ${findLinks} --no-cache-dir --break-system-packages --root-user-action=ignore ${quote(toolchain.pip)}`,
    );
  lines.push(
    String.raw`RUN rm -rf /tmp/roster-build-ca.crt /tmp/roster-wheels && find / -xdev -type f \( -perm -4000 -o -perm -2000 \) -exec chmod ug-s {} + && test -z "$(find / -xdev -type f \( -perm -4000 -o -perm -2000 \) -print -quit)"`,
    `LABEL ${TOOLCHAIN_LABEL}="${worker}"`,
    "USER worker",
  );
  return `${lines.join("\n")}\n`;
}

/** A wheel from the declared folder, as it enters the build. */
export interface Wheel {
  name: string;
  sha256: string;
  path: string;
}

/** The .whl files of the declared folder (not its subfolders), refused if the folder is not there. */
export async function readWheels(folder: string | undefined): Promise<Wheel[]> {
  if (!folder) return [];
  const names = await readdir(folder).catch(() => {
    throw new RosterError(`[toolchain] pip_wheels: ${folder} is not a readable folder`, {
      exitCode: 2,
    });
  });
  const wheels: Wheel[] = [];
  for (const name of names.filter((entry) => /^[A-Za-z0-9._+-]+\.whl$/.test(entry)).sort()) {
    const path = join(folder, name);
    if (!(await stat(path)).isFile()) continue;
    wheels.push({
      name,
      path,
      sha256: createHash("sha256")
        .update(await readFile(path))
        .digest("hex"),
    });
  }
  return wheels;
}

/** Which declared package the build's output blames, if it names one. */
export function blamedPackage(toolchain: Toolchain, output: string): string | undefined {
  const declared = [
    ...toolchain.apt.map((entry) => ({ ecosystem: "apt", entry, name: entry.split("=")[0] })),
    ...toolchain.npm.map((entry) => ({
      ecosystem: "npm",
      entry,
      name: entry.replace(/(.)@.*$/, "$1"),
    })),
    ...toolchain.pip.map((entry) => ({
      ecosystem: "pip",
      entry,
      name: entry.split(/[[=<>~!]/)[0],
    })),
  ];
  const blames = [
    /Unable to locate package (\S+)/,
    /Package '?([^' ]+)'? has no installation candidate/,
    /Version '[^']+' for '([^']+)' was not found/,
    /404 Not Found - GET \S+\/(@?[^/\s]+(?:\/[^/\s]+)?) /,
    /No matching version found for (@?[^@\s]+)/,
    /No matching distribution found for ([A-Za-z0-9._-]+)/,
  ];
  for (const pattern of blames) {
    const named = pattern.exec(output)?.[1]?.replace("%2f", "/").replace("%2F", "/");
    const hit = declared.find((d) => d.name === named);
    if (hit) return `${hit.ecosystem} package "${hit.entry}"`;
  }
  return undefined;
}

/** The worker's image: the box image itself when it declares nothing, else its derived one, built if missing. */
export async function ensureToolchainImage(options: {
  engine: BoxEngine;
  baseImage: string;
  worker: string;
  toolchain: Toolchain;
  progress: Progress;
  env?: NodeJS.ProcessEnv;
  /** The deployment that builds it (prune removes only its own). */
  deployment?: string;
}): Promise<ToolchainImage> {
  const { engine, toolchain, worker, progress } = options;
  const started = Date.now();
  if (toolchainIsEmpty(toolchain)) return { tag: options.baseImage, built: false, seconds: 0 };
  const base = await engine.image(options.baseImage);
  if (!base)
    throw new RosterError(
      `the box image ${options.baseImage} is missing; run \`roster box build\``,
    );
  const wheels = await readWheels(toolchain.pipWheels);
  const tag = toolchainTag(worker, base.id, toolchain, wheels);
  if (await engine.image(tag)) return { tag, built: false, seconds: 0 };

  const context = await mkdtemp(join(tmpdir(), "roster-toolchain-"));
  let build: ReturnType<ReturnType<typeof buildReader>["finish"]>;
  try {
    await writeFile(
      join(context, "Dockerfile"),
      toolchainDockerfile(base.id, worker, sorted(toolchain), wheels),
    );
    await mkdir(join(context, "wheels"));
    for (const wheel of wheels) await copyFile(wheel.path, join(context, "wheels", wheel.name));
    await writeFile(join(context, "build-ca.crt"), hostExtraCa(options.env ?? process.env));
    progress.step(`toolchain: building ${tag} for ${worker}`);
    const reader = buildReader(progress, "toolchain");
    await engine.buildImage(
      {
        context,
        files: ["Dockerfile", "build-ca.crt", ...wheels.map((wheel) => `wheels/${wheel.name}`)],
        tag,
        labels: {
          [TOOLCHAIN_LABEL]: worker,
          ...(options.deployment ? { [TOOLCHAIN_DEPLOYMENT_LABEL]: options.deployment } : {}),
        },
      },
      reader.onMessage,
    );
    build = reader.finish();
  } finally {
    await rm(context, { recursive: true, force: true });
  }
  const { failure, output } = build;
  if (failure) {
    const text = output.join("\n");
    const blamed = blamedPackage(toolchain, text);
    throw new RosterError(
      `the toolchain of ${worker} could not be built: ${blamed ? `${blamed} can't be installed` : failure}; nothing was started\n  ${output.slice(-8).join("\n  ")}`,
      { exitCode: 2 },
    );
  }
  return { tag, built: true, seconds: (Date.now() - started) / 1000 };
}
