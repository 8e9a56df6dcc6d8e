import { createWriteStream, existsSync, readFileSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type Docker from "dockerode";
import { outcomesSince } from "../actions/journal.ts";
import { boxEnvironment } from "../box/box-env.ts";
import { connectDocker, imageExists } from "../box/docker.ts";
import { ensureEgressLockdown } from "../box/firewall.ts";
import { buildBoxImage } from "../box/image-build.ts";
import { BOX_HOME, BOX_IMAGE, CONTAINER_LABELS, RUN_PI } from "../box/layout.ts";
import { runBox } from "../box/lifecycle.ts";
import { ensureLockedNetwork } from "../box/network.ts";
import { reapOrphans } from "../box/orphans.ts";
import { consoleProgress } from "../box/progress.ts";
import { formatConfigError, loadConfig, type WorkerView, workerView } from "../config/load.ts";
import { parseMemory } from "../config/memory.ts";
import { modelEndpoint } from "../config/model.ts";
import type { RosterPaths } from "../config/paths.ts";
import { errorMessage, RosterError } from "../errors.ts";
import { DEFAULT_GATEWAY_PORT } from "../gateway/defaults.ts";
import { mintToken, revokeToken } from "../gateway/identity.ts";
import { readCredential } from "../gateway/vault.ts";
import { buildRunHome } from "../home/build-home.ts";
import { compilePrompt } from "../prompt/compile.ts";
import { storeCredential } from "./credentials.ts";
import { type GatewayLease, leaseGateway } from "./gateway-lease.ts";
import { assistantText, describeEvent, LineSplitter, parseEvent } from "./pi-events.ts";
import {
  finished,
  listRuns,
  newRunId,
  type RunRecord,
  readRecord,
  runDir,
  writeRecord,
} from "./run-record.ts";

/**
 * `roster run <worker> "<prompt>"`: one governed run, end to end. Fails closed,
 * in order: config, network and firewall, gateway, CA, image, model credential.
 * Whatever happens, the container is removed, the token revoked and the record
 * finished; if the gateway goes away mid-run the box is killed at once and the
 * run fails with that cause (a box never outlives its door).
 */
export interface OneShotOptions {
  paths: RosterPaths;
  worker: string;
  prompt: string;
  ceilingMinutes: number;
  json: boolean;
  write: (text: string) => void;
  note: (text: string) => void;
  signal?: AbortSignal;
  env?: NodeJS.ProcessEnv;
}

export interface OneShotResult {
  exitCode: number;
  record: RunRecord | undefined;
  answer: string | undefined;
}

function refuse(message: string, exitCode = 2): RosterError {
  return new RosterError(message, { exitCode });
}

export async function loadWorker(
  paths: RosterPaths,
  name: string,
): Promise<{ worker: WorkerView; identity: string; config: ReturnType<typeof loadConfig> }> {
  const config = loadConfig(paths.config, { vaultDir: paths.vault });
  if (config.errors.length) {
    throw refuse(
      `config is invalid, nothing was started:\n${config.errors.map(formatConfigError).join("\n")}`,
    );
  }
  const worker = workerView(config, name);
  if (!worker)
    throw refuse(
      `no worker named "${name}": create ${join(paths.config, "workers", name, "worker.toml")} (roster init makes "elf")`,
    );
  const identityFile = join(worker.dir, "identity.md");
  const identity = existsSync(identityFile) ? readFileSync(identityFile, "utf8") : "";
  return { worker, identity, config };
}

export async function reapAndRecord(
  docker: Docker,
  paths: RosterPaths,
  note: (text: string) => void,
): Promise<void> {
  for (const orphan of await reapOrphans(docker)) {
    const dir = runDir(paths.state, orphan.worker, orphan.runId);
    const record = readRecord(dir);
    if (record && record.state === "running") {
      await writeRecord(
        dir,
        finished(
          record,
          "error",
          undefined,
          "orphaned: its runner was gone; the box was killed at the next start",
        ),
      );
    }
    note(`reaped an orphaned box of ${orphan.worker} (run ${orphan.runId})`);
  }
}

export async function runOneShot(options: OneShotOptions): Promise<OneShotResult> {
  const { paths, note } = options;
  const env = options.env ?? process.env;
  const { worker, identity, config } = await loadWorker(paths, options.worker);
  for (const warning of config.warnings) note(`warning: ${warning}`);
  if (!worker.model)
    throw refuse(`no model configured: add a [model] section to ${join(paths.config, "org.toml")}`);
  const endpoint = modelEndpoint(worker.model);

  const { client: docker } = await connectDocker(env);
  await reapAndRecord(docker, paths, note);

  // network and firewall
  const port = config.org.gateway?.port ?? DEFAULT_GATEWAY_PORT;
  let network: Awaited<ReturnType<typeof ensureLockedNetwork>>;
  try {
    network = await ensureLockedNetwork(docker);
  } catch (error) {
    throw refuse(`the locked network is not in place: ${errorMessage(error)}`);
  }
  if (worker.box.egress_lockdown === false) {
    note(
      "warning: [box] egress_lockdown = false — boxes can reach every port on this host; only the gateway is meant to be reachable",
    );
  } else {
    await ensureEgressLockdown(network.subnet, port);
  }

  // gateway: a running daemon's, or one embedded for this run; watched until released
  const lease = await leaseGateway({ paths, port, bridge: network.gateway, env });
  try {
    if (!existsSync(join(paths.ca, "ca.crt")) || !existsSync(join(paths.ca, "bundle.crt"))) {
      throw refuse(
        `the CA is missing from ${paths.ca}: start the gateway once (roster gateway start) to create it`,
      );
    }
    const image = config.org.engine?.image ?? BOX_IMAGE;
    if (!(await imageExists(docker, image))) {
      if (image !== BOX_IMAGE)
        throw refuse(`the box image ${image} is missing: build or pull it first`);
      note(`the box image ${image} is missing; building it (once)`);
      await buildBoxImage({ docker, progress: consoleProgress(), tag: image, env });
    }
    if (endpoint.credential && !readCredential(paths.vault, endpoint.credential)) {
      const fromEnv = endpoint.keyEnv ? env[endpoint.keyEnv] : undefined;
      if (fromEnv) {
        await storeCredential(paths.vault, endpoint.credential, { key: fromEnv });
        note(
          `stored ${endpoint.keyEnv} in the vault as credential "${endpoint.credential}" (it never enters a box)`,
        );
      } else {
        throw refuse(
          `no model credential "${endpoint.credential}" for ${worker.model.provider}: run \`roster login ${endpoint.credential}\`${endpoint.keyEnv ? ` or set ${endpoint.keyEnv}` : ""}`,
        );
      }
    }
    return await startRun(
      options,
      docker,
      worker,
      identity,
      network.gateway,
      lease,
      image,
      endpoint.keyEnv,
    );
  } finally {
    // after the box is gone: an embedded gateway is stopped only once nothing needs it
    await lease.release();
  }
}

async function startRun(
  options: OneShotOptions,
  docker: Docker,
  worker: WorkerView,
  identity: string,
  hostAddress: string,
  gateway: GatewayLease,
  image: string,
  keyEnv: string | undefined,
): Promise<OneShotResult> {
  const { paths } = options;
  // before this run's record exists: the previous run's start bounds "since your last run"
  const previous = listRuns(paths.state, worker.name)[0];
  const since = previous ? readRecord(previous.dir)?.started_at : undefined;
  const id = newRunId();
  const dir = runDir(paths.state, worker.name, id);
  let record: RunRecord = {
    id,
    worker: worker.name,
    kind: "box",
    state: "running",
    started_at: new Date().toISOString(),
    ceiling_min: options.ceilingMinutes,
    container: `roster-box-${id}`,
  };
  await writeRecord(dir, record);
  let token: string | undefined;
  try {
    let prompt: ReturnType<typeof compilePrompt>;
    try {
      prompt = compilePrompt({
        worker,
        identity,
        task: options.prompt,
        runId: id,
        ceilingMinutes: options.ceilingMinutes,
        outcomes: outcomesSince(paths, worker.name, since),
      });
    } catch (error) {
      throw refuse(`the prompt can't be compiled: ${errorMessage(error)}`);
    }
    await mkdir(join(dir, "prompt"), { recursive: true });
    await writeFile(join(dir, "prompt/system.md"), prompt.system);
    await writeFile(join(dir, "prompt/input.md"), prompt.input);

    const home = await buildRunHome({ paths, worker, runDir: dir });
    token = await mintToken(paths.identity, { subject: `org/${worker.name}`, runId: id });
    const env = boxEnvironment({
      token,
      gatewayHost: "host.docker.internal",
      gatewayPort: gateway.port,
      runId: id,
      sentinels: [...worker.sentinels, ...(keyEnv ? [keyEnv] : [])],
    });
    env.ROSTER_CEILING_MIN = String(options.ceilingMinutes);

    const events = createWriteStream(join(dir, "events.jsonl"), { flags: "a" });
    const stderr = createWriteStream(join(dir, "stderr.log"), { flags: "a" });
    const splitter = new LineSplitter();
    let answer: string | undefined;
    const onLine = (line: string) => {
      if (options.json) options.write(`${line}\n`);
      const event = parseEvent(line);
      if (!event) return;
      const text = assistantText(event);
      if (text) answer = text;
      const shown = options.json ? undefined : describeEvent(event);
      if (shown) options.note(shown);
    };
    const outcome = await runBox(
      docker,
      {
        image,
        name: `roster-box-${id}`,
        cmd: [
          RUN_PI,
          "--mode",
          "json",
          "--session-dir",
          `${BOX_HOME}/session`,
          "--append-system-prompt",
          prompt.system,
          prompt.input,
        ],
        env,
        mounts: home.mounts,
        user: home.user,
        hostAddress,
        limits: {
          ...(worker.box.pids_limit ? { pids: worker.box.pids_limit } : {}),
          ...(worker.box.memory ? { memoryBytes: parseMemory(worker.box.memory) } : {}),
          ...(worker.box.cpus ? { cpus: worker.box.cpus } : {}),
        },
        labels: { [CONTAINER_LABELS.worker]: worker.name, [CONTAINER_LABELS.run]: id },
      },
      {
        deadlineMs: options.ceilingMinutes * 60_000,
        ...(options.signal ? { signal: options.signal } : {}),
        fault: gateway.lost,
        onStdout: (chunk) => {
          events.write(chunk);
          for (const line of splitter.push(chunk.toString("utf8"))) onLine(line);
        },
        onStderr: (chunk) => stderr.write(chunk),
      },
    );
    for (const line of splitter.flush()) onLine(line);
    await Promise.all(
      [events, stderr].map((stream) => new Promise((resolve) => stream.end(resolve))),
    );
    if (outcome.endedBy === "error") {
      // the box was killed because its gateway went away: a failure of the run, not the worker
      const cause = `${errorMessage(gateway.lost.reason)} during the run; the box was stopped`;
      record = finished(record, "error", undefined, cause);
      await writeRecord(dir, record);
      throw new RosterError(cause, { exitCode: 1 });
    }
    record = finished(record, outcome.endedBy, outcome.exitCode);
    if (outcome.endedBy === "ceiling")
      record.error = `killed at the ${options.ceilingMinutes}-minute ceiling`;
    await writeRecord(dir, record);
    if (!options.json && answer) options.write(`${answer.trimEnd()}\n`);
    const exitCode =
      outcome.endedBy === "ceiling" ? 2 : outcome.endedBy === "signal" ? 130 : outcome.exitCode;
    return { exitCode, record, answer };
  } catch (error) {
    if (record.state === "running") {
      record = finished(record, "error", undefined, errorMessage(error));
      await writeRecord(dir, record);
    }
    throw error;
  } finally {
    if (token) await revokeToken(paths.identity, token);
  }
}
