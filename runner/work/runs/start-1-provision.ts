import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { connectEngine } from "../../boundary/box/connect.ts";
import type { BoxSpec } from "../../boundary/box/container-spec.ts";
import { ensureCurrentImage } from "../../boundary/box/current-image.ts";
import type { BoxEngine } from "../../boundary/box/engine.ts";
import { engineDirMounts, engineDirWarning } from "../../boundary/box/engine-dir.ts";
import { BOX_IMAGE, boxUser, deploymentLabel } from "../../boundary/box/layout.ts";
import { reapOrphans } from "../../boundary/box/orphans.ts";
import {
  deploymentKey,
  ensureToolsVolume,
  toolsVolumePath,
} from "../../boundary/box/tools-volume.ts";
import { type WorkerBoxInput, workerBoxSpec } from "../../boundary/box/worker-box.ts";
import { ensureWorkerImage } from "../../boundary/box/worker-image.ts";
import { readCredential } from "../../boundary/gateway/credentials/vault.ts";
import { revokeRunTokens } from "../../boundary/gateway/doors/identity.ts";
import { loadTestedConfig } from "../../boundary/gateway/policy/vetting.ts";
import { DEFAULT_GATEWAY_PORT } from "../../boundary/gateway/settings/defaults.ts";
import { ceilingProblem } from "../../ground/config/ceiling.ts";
import { formatConfigError, type LoadedConfig } from "../../ground/config/load.ts";
import { modelEndpoint } from "../../ground/config/model.ts";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { projectToolchains, withProjects } from "../../ground/config/project-toolchain.ts";
import { scratchKeepMs } from "../../ground/config/store-limits.ts";
import type { Toolchain } from "../../ground/config/toolchain-schema.ts";
import { type WorkerView, workerView } from "../../ground/config/worker-view.ts";
import { RosterError } from "../../ground/errors.ts";
import { keepConfig } from "../../records/config-history/history.ts";
import {
  finished,
  type RunRecord,
  readRecord,
  runDir,
  writeRecord,
} from "../../records/run-records/run-record.ts";
import { ensureKnowledgeRepo } from "../../records/workers/knowledge-repo.ts";
import { settleAfterCrash, settleRunRepos } from "../repos/backstop.ts";
import { gatedRepos } from "../repos/clone.ts";
import { sweepLogsWhenDue } from "../retention/log-sweep.ts";
import { storeCredential } from "./credentials.ts";
import { type GatewayLease, leaseGateway } from "./gateway-lease.ts";
import { autoPrune } from "./retention.ts";

/**
 * Phase 1 of a box's start (run.ts names the four): the fail-closed
 * preconditions every box needs, once, for every kind of run:
 * config, a gateway (running, or embedded and watched) and its door,
 * the CA, the image (rebuilt when it is roster's and missing or built from
 * other sources than today's), the model credential. What comes back
 * is a handle a one-shot run, a task or a chat session starts its box from;
 * `release()` it when the box is gone.
 */
export interface Provisioned {
  engine: BoxEngine;
  config: LoadedConfig;
  /** The digest of the files `config` was loaded from (kept in the config history). */
  configDigest: string;
  worker: WorkerView;
  identity: string;
  image: string;
  gateway: GatewayLease;
  /** The model provider's key variable (a sentinel in the box), if it has one. */
  keyEnv: string | undefined;
  /** The tools volume's folder on this host, when it can be seen (the disk watch measures it). */
  toolsDir: string | undefined;
  /**
   * After a run's box is gone: what became of its gated repos' clones (pushed,
   * unchanged, or unpushed work kept on a quarantine ref); undefined without any.
   */
  /**
   * The box spec for one of this worker's runs: the caller gives the run, its
   * $HOME, token, command and its own door (the gateway's `openDoor`).
   */
  boxSpec(
    run: Omit<WorkerBoxInput, "worker" | "image" | "keyEnv" | "toolsVolume" | "deployment">,
  ): BoxSpec;
  settleRepos(run: {
    id: string;
    dir: string;
    records: RunRecord["repos"];
  }): Promise<RunRecord["repos"]>;
  release(): Promise<void>;
}

export interface ProvisionOptions {
  paths: RosterPaths;
  worker: string;
  note: (text: string) => void;
  env?: NodeJS.ProcessEnv;
  /** False for a box that runs no engine (`roster box exec`): no model, no model credential. */
  model?: boolean;
}

function refuse(message: string, exitCode = 2): RosterError {
  return new RosterError(message, { exitCode });
}

/** A run's wall-clock ceiling, refused before anything starts when it is out of range. */
export function assertCeiling(minutes: number): void {
  const problem = ceilingProblem(minutes);
  if (problem) throw refuse(problem);
}

export async function loadWorker(
  paths: RosterPaths,
  name: string,
): Promise<{ worker: WorkerView; identity: string; config: LoadedConfig; configDigest: string }> {
  // broken, or failing one of its own [[test]] cases: refused before anything starts
  const read = loadTestedConfig(paths, "nothing was started");
  const { config } = read;
  const worker = workerView(config, name, { dataRoot: paths.data });
  if (!worker)
    throw refuse(
      `no worker named "${name}": create ${join(paths.config, "workers", name, "worker.toml")} (roster init makes "elf")`,
    );
  // a worker's knowledge repo is made at its first run (roster init makes elf's)
  await ensureKnowledgeRepo(paths, name);
  const identityFile = join(worker.dir, "identity.md");
  const identity = existsSync(identityFile) ? readFileSync(identityFile, "utf8") : "";
  // the run's record names this config by its digest: the history keeps it to be read back
  keepConfig(paths.data, read, "run");
  return { worker, identity, config, configDigest: read.digest };
}

export async function reapAndRecord(
  engine: BoxEngine,
  paths: RosterPaths,
  note: (text: string) => void,
): Promise<void> {
  for (const orphan of await reapOrphans(engine, deploymentLabel(paths.state))) {
    const dir = runDir(paths.state, orphan.worker, orphan.runId);
    const record = readRecord(dir);
    if (record && record.state === "running") {
      await writeRecord(
        dir,
        finished(
          await settleAfterCrash(engine, paths, record, dir),
          "crash",
          undefined,
          "orphaned: its runner was gone; the box was killed at the next start",
        ),
      );
    }
    await revokeRunTokens(paths.identity, orphan.runId);
    note(`reaped an orphaned box of ${orphan.worker} (run ${orphan.runId})`);
  }
}

export async function provision(options: ProvisionOptions): Promise<Provisioned> {
  const { paths, note } = options;
  const env = options.env ?? process.env;
  const { worker, identity, config, configDigest, keyEnv, toolchain } = await checkWorker(
    options,
    env,
  );
  const org = orgEngine(config, worker, note);
  // What does not depend on each other runs at once: the gateway (a process of
  // its own when embedded) starts while the engine's client loads; then the
  // image and the orphan sweep. Every step is awaited before any failure is
  // reported, and a gateway already leased is given back.
  // a running daemon's gateway, or one embedded for this run; watched until released
  const leased = leaseGateway({ paths, port: org.port, env });
  const engine = await connectEngine({
    env,
    ...(config.org.engine?.kind ? { kind: config.org.engine.kind } : {}),
  }).catch(async (error: unknown) => {
    await giveBack(leased);
    throw error;
  });
  const workerImage = buildWorkerImage({
    engine,
    paths,
    worker,
    toolchain,
    image: org.image,
    env,
    note,
  });
  const settled = await Promise.allSettled([
    leased,
    workerImage,
    reapAndRecord(engine, paths, note),
    // finished runs' $HOME and clones past [store] scratch_keep go (retention.ts); never fails
    autoPrune(paths, scratchKeepMs(config.org.store), note),
    // the growing logs rotated and kept to [retention] (work/retention); never fails
    sweepLogsWhenDue(paths, config.org.retention, note),
  ]);
  const gateway = settled[0].status === "fulfilled" ? settled[0].value : undefined;
  try {
    const failed = settled.find((result) => result.status === "rejected");
    if (failed) throw failed.reason;
    if (!gateway) throw new Error("the gateway lease was lost");
    const built = await workerImage;
    assertCa(paths);
    return provisioned(
      { engine, config, configDigest, worker, identity, gateway, keyEnv, paths },
      built,
      org,
    );
  } catch (error) {
    await gateway?.release();
    throw error;
  }
}

/** A worker as every box of it needs it: its config, identity, model key variable and toolchain. */
interface CheckedWorker {
  worker: WorkerView;
  identity: string;
  config: LoadedConfig;
  configDigest: string;
  keyEnv: string | undefined;
  toolchain: Toolchain;
}

/** The worker, its identity, its model's credential and its toolchain: refused before anything starts. */
async function checkWorker(
  options: ProvisionOptions,
  env: NodeJS.ProcessEnv,
): Promise<CheckedWorker> {
  const { paths, note } = options;
  const { worker, identity, config, configDigest } = await loadWorker(paths, options.worker);
  for (const warning of config.warnings) note(`warning: ${warning}`);
  const keyEnv = options.model === false ? undefined : await checkModel(paths, worker, env, note);
  // what the projects it mounts declare joins the worker's own toolchain
  const projects = await projectToolchains(worker.mounts);
  if (projects.errors.length)
    throw refuse(
      `a project's toolchain is invalid, nothing was started:\n${projects.errors.map(formatConfigError).join("\n")}`,
    );
  const toolchain = withProjects(worker.toolchain, projects.toolchain);
  return { worker, identity, config, configDigest, keyEnv, toolchain };
}

/** The org's gateway port, box image and engine folder, with the notes they call for. */
function orgEngine(
  config: LoadedConfig,
  worker: WorkerView,
  note: (text: string) => void,
): { port: number; image: string; engineDir: string | undefined } {
  const port = config.org.gateway?.port ?? DEFAULT_GATEWAY_PORT;
  const image = config.org.engine?.image ?? BOX_IMAGE;
  // for development: a checkout's engine over the baked one (the loader checked it exists)
  const engineDir = config.org.engine?.dir;
  if (engineDir) note(engineDirWarning(engineDir));
  if (worker.box.egress_lockdown === false) {
    note(
      "warning: [box] egress_lockdown = false no longer does anything: a box has no network, and the gateway's door is its only way out",
    );
  }
  return { port, image, engineDir };
}

/** What a worker's box is started from: the image with its toolchain, and the tools volume. */
interface BuiltImage {
  tag: string;
  toolsVolume: string;
  toolsDir: string | undefined;
}

/**
 * The box image (rebuilt when it is roster's and missing or stale), the worker's
 * agent and toolchain on it (worker-image.ts), and the toolchain volume for
 * exactly that image.
 */
async function buildWorkerImage(options: {
  engine: BoxEngine;
  paths: RosterPaths;
  worker: WorkerView;
  toolchain: Toolchain;
  image: string;
  env: NodeJS.ProcessEnv;
  note: (text: string) => void;
}): Promise<BuiltImage> {
  const { engine, paths, worker, image, env, note } = options;
  const baseId = await ensureCurrentImage({ engine, image, env, note });
  const { tag } = await ensureWorkerImage({
    engine,
    baseImage: image,
    worker: worker.name,
    agent: worker.agent,
    toolchain: options.toolchain,
    deployment: deploymentKey(paths.config),
    progress: { step: note, detail: () => undefined, note },
    env,
  });
  const id = tag === image ? baseId : await builtImageId(engine, tag);
  const volume = await ensureToolsVolume(engine, deploymentKey(paths.config), worker.name, id);
  return { tag, toolsVolume: volume, toolsDir: await toolsVolumePath(engine, volume) };
}

function assertCa(paths: RosterPaths): void {
  if (!existsSync(join(paths.ca, "ca.crt")) || !existsSync(join(paths.ca, "bundle.crt"))) {
    throw refuse(
      `the CA is missing from ${paths.ca}: start the gateway once (roster gateway start) to create it`,
    );
  }
}

/** The handle a box is started from, once every precondition holds. */
function provisioned(
  held: Omit<Provisioned, "image" | "toolsDir" | "boxSpec" | "settleRepos" | "release"> & {
    paths: RosterPaths;
  },
  built: BuiltImage,
  org: { engineDir: string | undefined },
): Provisioned {
  const { engine, paths, worker, keyEnv, gateway } = held;
  const { tag, toolsVolume, toolsDir } = built;
  const { engineDir } = org;
  return {
    engine,
    config: held.config,
    configDigest: held.configDigest,
    worker,
    identity: held.identity,
    image: tag,
    gateway,
    keyEnv,
    toolsDir,
    boxSpec: (run) => {
      const spec = workerBoxSpec({
        ...run,
        worker,
        image: tag,
        keyEnv,
        toolsVolume,
        deployment: deploymentLabel(paths.state),
      });
      return engineDir
        ? { ...spec, mounts: [...(spec.mounts ?? []), ...engineDirMounts(engineDir)] }
        : spec;
    },
    settleRepos: (run) =>
      settleRunRepos({
        engine,
        image: tag,
        paths,
        worker: worker.name,
        runId: run.id,
        runDir: run.dir,
        user: boxUser(),
        repos: gatedRepos(worker.mounts),
        records: run.records,
        runtime: worker.box.runtime,
      }),
    // after the box is gone: an embedded gateway is stopped only once nothing needs it
    release: () => gateway.release(),
  };
}

/** The model the worker's engine talks to, and its credential in the vault: its key variable. */
async function checkModel(
  paths: RosterPaths,
  worker: WorkerView,
  env: NodeJS.ProcessEnv,
  note: (text: string) => void,
): Promise<string | undefined> {
  if (!worker.model)
    throw refuse(`no model configured: add a [model] section to ${join(paths.config, "org.toml")}`);
  const endpoint = modelEndpoint(worker.model);

  // the credential first: a run that can't talk to its model starts nothing
  if (endpoint.credential && !readCredential(paths.vault, endpoint.credential)) {
    const fromEnv = endpoint.keyEnv ? env[endpoint.keyEnv] : undefined;
    if (!fromEnv)
      throw refuse(
        `no model credential "${endpoint.credential}" for ${worker.model.provider}: run \`roster login ${endpoint.credential}\`${endpoint.keyEnv ? ` or set ${endpoint.keyEnv}` : ""}`,
      );
    await storeCredential(paths.vault, endpoint.credential, { key: fromEnv });
    note(
      `stored ${endpoint.keyEnv} in the vault as credential "${endpoint.credential}" (it never enters a box)`,
    );
  }

  return endpoint.keyEnv;
}

/** After a failure: waits for the gateway and stops it if it came up. */
async function giveBack(leased: Promise<GatewayLease>): Promise<void> {
  const [gateway] = await Promise.allSettled([leased]);
  if (gateway.status === "fulfilled") await gateway.value.release();
}

/** The id of an image that was just built or found: its absence now is a fault, not a refusal. */
async function builtImageId(engine: BoxEngine, tag: string): Promise<string> {
  const id = (await engine.image(tag))?.id;
  if (!id) throw new Error(`the image ${tag} is missing right after it was built`);
  return id;
}
