import { chmod, mkdir, rm } from "node:fs/promises";
import {
  type EndedBy as BoxEndedBy,
  type BoxHandle,
  type RunBoxOptions,
  startContainer,
} from "../../boundary/box/lifecycle.ts";
import type { WorkerBoxInput } from "../../boundary/box/worker-box.ts";
import { closeDoor, runDoorDir } from "../../boundary/gateway/doors/door.ts";
import { mintReadyToken, mintToken, revokeToken } from "../../boundary/gateway/doors/identity.ts";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { workerSubject } from "../../ground/config/subject.ts";
import { newRunId, runDir } from "../../records/run-records/run-record.ts";
import { assertNotPaused } from "../../records/workers/pause.ts";
import { buildRunHome, type RunHome } from "../home/build-home.ts";
import type { AheadClones } from "../repos/clone.ts";
import type { ReadyStart } from "./run-request.ts";
import type { Provisioned } from "./start-1-provision.ts";

/**
 * Phase 4 of a box's start (run.ts names the four): from a provisioned box to
 * a running one — the run's $HOME, its token, its door, the container — and
 * the one teardown that gives back whatever a start got to. Every box is
 * started by these steps and
 * ended by this teardown: a ready box (runner/work/ready/) is the same steps
 * taken before its run and paused there, and its discard is the same teardown.
 */

/** A box's start, as far as it has come: what its teardown gives back. */
export interface BoxStart {
  readonly id: string;
  /** Its run folder: $HOME, clones, and the record once the run has one. */
  readonly dir: string;
  readonly box: Provisioned;
  token: string | undefined;
  /** A door was made for it (opened by the gateway, or its folder made ahead of its run). */
  door: boolean;
  handle: BoxHandle | undefined;
}

/** What the box is started with: its $HOME, its token, and its door's folder on this host. */
export interface BoxParts {
  home: RunHome;
  token: string;
  door: string;
}

/** A start with nothing taken yet: a run id of its own, and its folder. */
export function newBoxStart(paths: RosterPaths, box: Provisioned): BoxStart {
  const id = newRunId();
  const dir = runDir(paths.state, box.worker.name, id);
  return { id, dir, box, token: undefined, door: false, handle: undefined };
}

/** A ready box's start: every step taken but the run's own (its door was made with it). */
export function readyStart(ready: ReadyStart): BoxStart {
  const { id, dir, box, token, handle } = ready;
  return { id, dir, box, token, door: true, handle };
}

/**
 * The $HOME, the token and the door. A run's token is live and its door opened
 * by the gateway; `ahead` (a box made before its run) gets a token minted
 * unbound and only the door's folder, so it can reach nothing until its hand-off
 * binds the token and the gateway opens the door (hand-off.ts).
 */
export async function prepareBox(
  paths: RosterPaths,
  start: BoxStart,
  options: {
    channel?: string | undefined;
    ahead?: boolean;
    /** The channels the run's input came from (run-context.ts); its channel's, or none, by default. */
    origins?: string[];
    /** A server's clones made ahead of their runs (repos/spare-clones.ts). */
    spares?: AheadClones | undefined;
  },
): Promise<BoxParts> {
  const { id, dir, box } = start;
  // a ready box too: none is made for a paused worker
  assertNotPaused(paths, box.worker.name);
  const home = await buildRunHome({
    paths,
    worker: box.worker,
    runDir: dir,
    runId: id,
    ...(options.channel ? { channel: options.channel } : {}),
    spares: options.spares,
  });
  // what a grant or an action limited to a class of channels is judged by, for the whole run
  const origins = options.origins ?? (options.channel ? [options.channel] : []);
  const identity = { subject: workerSubject(box.worker.name), runId: id, origins };
  const token = options.ahead
    ? await mintReadyToken(paths.identity, identity)
    : await mintToken(paths.identity, identity);
  start.token = token;
  start.door = true;
  if (!options.ahead) {
    // a door of its own: the gateway knows which box a connection comes from before it
    // reads a byte, and bounds what one box can hold there (asked once the token is live)
    return { home, token, door: await box.gateway.openDoor(id) };
  }
  // the run's door folder, mounted now; the gateway listens in it once the token is bound
  const door = runDoorDir(box.gateway.door, id);
  await mkdir(door, { recursive: true, mode: 0o755 });
  await chmod(door, 0o755);
  return { home, token, door };
}

/** The last step: the box spec from its parts and the command, and the box started from it. */
export async function startPrepared(
  start: BoxStart,
  parts: BoxParts,
  run: Pick<WorkerBoxInput, "cmd" | "env" | "interactive" | "stdinOnce">,
  options: RunBoxOptions,
): Promise<BoxHandle> {
  const spec = start.box.boxSpec({ runId: start.id, ...parts, ...run });
  start.handle = await startContainer(start.box.engine, spec, options);
  return start.handle;
}

/**
 * Ends a start wherever it got to: the box killed and gone, `settle` (a run's
 * repos and record, once the box can no longer change them), then whatever
 * happened: the token revoked, the door closed, the gateway given back. A box
 * that never had its run (`unrun`) leaves no door folder and no run folder.
 */
export async function teardown(
  paths: RosterPaths,
  start: BoxStart,
  how: { kill: BoxEndedBy; unrun?: boolean },
): Promise<void>;
export async function teardown<T>(
  paths: RosterPaths,
  start: BoxStart,
  how: { kill: BoxEndedBy; unrun?: boolean },
  settle: () => Promise<T>,
): Promise<T>;
export async function teardown<T>(
  paths: RosterPaths,
  start: BoxStart,
  how: { kill: BoxEndedBy; unrun?: boolean },
  settle?: () => Promise<T>,
): Promise<T | undefined> {
  try {
    if (start.handle) {
      await start.handle.kill(how.kill);
      await start.handle.done;
    }
    return await settle?.();
  } finally {
    if (start.token) await revokeToken(paths.identity, start.token);
    // the box is gone: its door goes too (a gateway that went away took it already)
    if (start.door) await start.box.gateway.closeDoor(start.id).catch(() => undefined);
    if (how.unrun) {
      await closeDoor(runDoorDir(start.box.gateway.door, start.id), true).catch(() => undefined);
      await rm(start.dir, { recursive: true, force: true }).catch(() => undefined);
    }
    await start.box.release();
  }
}
