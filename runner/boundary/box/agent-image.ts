import { createHash } from "node:crypto";
import { copyFile, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AgentKind } from "../../ground/config/agent-schema.ts";
import { RosterError } from "../../ground/errors.ts";
import { PROJECT_ROOT } from "../../ground/version.ts";
import { hostExtraCa } from "./build-context.ts";
import { buildReader } from "./build-output.ts";
import type { BoxEngine } from "./engine.ts";
import { AGENTS_DIR } from "./layout.ts";
import type { Progress } from "./progress.ts";

/**
 * A worker's agent, when it is not pi, as a layer of its own on the box
 * image: `roster-box-agent-<agent>:<hash>`, built the first time a worker
 * needs it (or by `roster box build --agent`). Claude Code and Codex are
 * native programs of about 400 MB each; in the box image every deployment
 * would carry both whether or not a worker runs them (bench/RESULTS.md has
 * the sizes and a first run both ways).
 *
 * The packages come from their npm packages pinned with a lockfile in
 * engine/agents/<agent>/, fetched in a stage that starts from the box
 * image's own base, so that stage stays cached while the box image changes;
 * the layer then copies them under AGENTS_DIR. The tag covers the box
 * image's id, the recipe and the lockfile: a rebuilt box image or a new pin
 * is a new tag, and a failed build leaves no tag behind.
 */
export const AGENT_LABEL = "org.roster.agent";
export const AGENT_DEPLOYMENT_LABEL = "org.roster.agent.deployment";

/** The pinned package of an agent: engine/agents/<agent>/. */
export function agentPackageDir(agent: Exclude<AgentKind, "pi">, projectRoot = PROJECT_ROOT) {
  return join(projectRoot, "engine", "agents", agent);
}

/** The Dockerfile: fetch in the base's image (no scripts run), copy into the box image. */
export function agentDockerfile(baseId: string, fetchFrom: string, agent: AgentKind): string {
  const dir = `${AGENTS_DIR}/${agent}`;
  return `${[
    `FROM ${fetchFrom} AS fetch`,
    "USER root",
    'SHELL ["/bin/bash", "-o", "pipefail", "-c"]',
    "COPY build-ca.crt /tmp/roster-build-ca.crt",
    `COPY package.json package-lock.json ${dir}/`,
    `WORKDIR ${dir}`,
    // only the lockfile's packages for this platform; their install scripts never run
    `RUN if [ -s /tmp/roster-build-ca.crt ]; then export NODE_EXTRA_CA_CERTS=/tmp/roster-build-ca.crt; fi; npm ci --omit=dev --ignore-scripts --no-audit --no-fund --loglevel=error && rm -rf /root/.npm && chmod -R a+rX,go-w ${dir}`,
    `FROM ${baseId}`,
    `COPY --from=fetch ${dir} ${dir}`,
    `LABEL ${AGENT_LABEL}="${agent}"`,
    "USER worker",
  ].join("\n")}\n`;
}

export function agentTag(agent: AgentKind, dockerfile: string, lock: string): string {
  const hash = createHash("sha256").update(dockerfile).update(lock).digest("hex").slice(0, 16);
  return `roster-box-agent-${agent}:${hash}`;
}

export interface AgentImage {
  tag: string;
  built: boolean;
  seconds: number;
}

/** An agent's layer as it would be built now: its tag and what builds it. */
interface AgentRecipe {
  tag: string;
  dockerfile: string;
  lock: string;
  packageDir: string;
}

/** The recipe of an agent's layer on the box image `base` (its id and labels). */
export async function agentRecipe(
  engine: BoxEngine,
  base: { id: string; labels: Record<string, string> },
  agent: Exclude<AgentKind, "pi">,
  projectRoot?: string,
): Promise<AgentRecipe> {
  const packageDir = agentPackageDir(agent, projectRoot);
  const lock = await readFile(join(packageDir, "package-lock.json"), "utf8").catch(() => {
    throw new RosterError(
      `the pinned ${agent} package is missing from this roster (${join("engine", "agents", agent)}): reinstall roster`,
      { exitCode: 2 },
    );
  });
  // the box image's own base fetches, so a changed box image does not fetch again
  const named = base.labels["org.roster.base"];
  const fetchFrom = named && (await engine.image(named)) ? named : base.id;
  const dockerfile = agentDockerfile(base.id, fetchFrom, agent);
  return { tag: agentTag(agent, dockerfile, lock), dockerfile, lock, packageDir };
}

/** The image a worker's box starts from for its agent: the box image itself for pi. */
export async function ensureAgentImage(options: {
  engine: BoxEngine;
  baseImage: string;
  agent: AgentKind;
  progress: Progress;
  env?: NodeJS.ProcessEnv;
  deployment?: string;
  projectRoot?: string;
}): Promise<AgentImage> {
  const { engine, agent, progress } = options;
  if (agent === "pi") return { tag: options.baseImage, built: false, seconds: 0 };
  const started = Date.now();
  const base = await engine.image(options.baseImage);
  if (!base)
    throw new RosterError(
      `the box image ${options.baseImage} is missing; run \`roster box build\``,
    );
  const { tag, dockerfile, lock, packageDir } = await agentRecipe(
    engine,
    base,
    agent,
    options.projectRoot,
  );
  if (await engine.image(tag)) return { tag, built: false, seconds: 0 };

  const context = await mkdtemp(join(tmpdir(), "roster-agent-"));
  let build: ReturnType<ReturnType<typeof buildReader>["finish"]>;
  try {
    await writeFile(join(context, "Dockerfile"), dockerfile);
    await copyFile(join(packageDir, "package.json"), join(context, "package.json"));
    await writeFile(join(context, "package-lock.json"), lock);
    await writeFile(join(context, "build-ca.crt"), hostExtraCa(options.env ?? process.env));
    progress.step(`agent: building ${tag} (${agent}, first use)`);
    const reader = buildReader(progress, "agent");
    await engine.buildImage(
      {
        context,
        files: ["Dockerfile", "package.json", "package-lock.json", "build-ca.crt"],
        tag,
        labels: {
          [AGENT_LABEL]: agent,
          ...(options.deployment ? { [AGENT_DEPLOYMENT_LABEL]: options.deployment } : {}),
        },
      },
      reader.onMessage,
    );
    build = reader.finish();
  } finally {
    await rm(context, { recursive: true, force: true });
  }
  if (build.failure)
    throw new RosterError(
      `the ${agent} agent layer could not be built: ${build.failure}; nothing was started\n  ${build.output.slice(-8).join("\n  ")}`,
      { exitCode: 2 },
    );
  return { tag, built: true, seconds: (Date.now() - started) / 1000 };
}
