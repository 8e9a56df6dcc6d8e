import { chmod, mkdir, rm, stat } from "node:fs/promises";
import { join } from "node:path";
import { BOX_HOME, READY_WAITER, RUN_PI } from "../../boundary/box/layout.ts";
import { startBox } from "../../boundary/box/lifecycle.ts";
import { closeDoor, runDoorDir } from "../../boundary/gateway/door.ts";
import { mintReadyToken, revokeToken } from "../../boundary/gateway/identity.ts";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { workerSubject } from "../../ground/config/subject.ts";
import { newRunId, runDir } from "../../records/run-records/run-record.ts";
import { buildRunHome } from "../home/build-home.ts";
import { provision } from "../runs/provision.ts";
import type { ReadyStart } from "../runs/run-request.ts";
import { readyKey } from "./ready-key.ts";

/**
 * A box started before its run (docs/ready-boxes.md): made for one run id,
 * its $HOME built, its door folder mounted and still empty, its token minted
 * unbound, pi loaded in RPC mode with no prompt. The run owner (runs/run.ts)
 * hands it a run; until then the gateway refuses its token and opens no door
 * for it, so it can reach nothing. It serves that one run, or none.
 */
export interface ReadyBox extends ReadyStart {
  readonly worker: string;
  /** A session's box: made for this channel (its folder is mounted at ~/channel). */
  readonly channel?: string;
  /** What it was made from (ready-key.ts): a different key at hand-off discards it. */
  readonly key: string;
  readonly madeAt: number;
}

/** Where a ready box's pi looks for its hand-off, inside the box (self/ is the host's, read-only). */
export const BOX_HANDOFF = `${BOX_HOME}/self/handoff.json`;

export async function makeReadyBox(options: {
  paths: RosterPaths;
  worker: string;
  channel?: string;
  /** For `box exec`: no model, no engine; roster-ready waits for the command. */
  exec?: boolean;
  note: (text: string) => void;
  env?: NodeJS.ProcessEnv;
}): Promise<ReadyBox> {
  const { paths } = options;
  const box = await provision({
    paths,
    worker: options.worker,
    note: options.note,
    // a command's box has no model, as a plain `box exec` has none
    model: !options.exec,
    ...(options.env ? { env: options.env } : {}),
  });
  const id = newRunId();
  const dir = runDir(paths.state, box.worker.name, id);
  const door = runDoorDir(box.gateway.door, id);
  let token: string | undefined;
  try {
    const key = await readyKey(paths.config, box.engine, box.image);
    const home = await buildRunHome({
      paths,
      worker: box.worker,
      runDir: dir,
      runId: id,
      ...(options.channel ? { channel: options.channel } : {}),
    });
    token = await mintReadyToken(paths.identity, {
      subject: workerSubject(box.worker.name),
      runId: id,
    });
    // the run's door folder, mounted now; the gateway listens in it once the token is bound
    await mkdir(door, { recursive: true, mode: 0o755 });
    await chmod(door, 0o755);
    const doorIno = (await stat(door)).ino;
    const output: ReadyBox["output"] = {};
    const spec = box.boxSpec({
      runId: id,
      home,
      token,
      door,
      ...(options.exec
        ? { cmd: [READY_WAITER] }
        : {
            cmd: [RUN_PI, "--mode", "rpc", "--session-dir", `${BOX_HOME}/session`],
            env: { ROSTER_HANDOFF: BOX_HANDOFF },
          }),
      interactive: true,
      // a one-shot run's pi exits when its task is done and stdin ends, as in json mode;
      // roster-ready runs its command when the command has been sent and stdin ends
      stdinOnce: true,
    });
    const handle = await startBox(box.engine, spec, {
      // a command's box, as `box exec` starts it: asked whether the OOM killer ended it
      ...(options.exec ? { reportOom: true } : {}),
      onStdout: (chunk) => output.stdout?.(chunk),
      onStderr: (chunk) => output.stderr?.(chunk),
    });
    let ended = false;
    void handle.done.then(() => {
      ended = true;
    });
    const ready: ReadyBox = {
      ended: () => ended,
      discard: () => discardReadyBox(paths, ready),
      doorIno,
      worker: box.worker.name,
      ...(options.channel ? { channel: options.channel } : {}),
      ...(options.exec ? { exec: true } : {}),
      key,
      id,
      dir,
      home,
      token,
      box,
      handle,
      madeAt: Date.now(),
      output,
      handoffFile: join(dir, "self", "handoff.json"),
    };
    return ready;
  } catch (error) {
    if (token) await revokeToken(paths.identity, token);
    await closeDoor(door, true).catch(() => undefined);
    await rm(dir, { recursive: true, force: true }).catch(() => undefined);
    await box.release();
    throw error;
  }
}

/**
 * Ends a ready box that will serve no run: the box killed and removed, its
 * token and door folder gone, the folder of the run it never had removed.
 */
export async function discardReadyBox(paths: RosterPaths, ready: ReadyBox): Promise<void> {
  await ready.handle.kill("signal");
  await ready.handle.done;
  await revokeToken(paths.identity, ready.token);
  // a door the hand-off opened is closed by the gateway, as a run's is; the folder made
  // with the box goes either way
  await ready.box.gateway.closeDoor(ready.id).catch(() => undefined);
  await closeDoor(runDoorDir(ready.box.gateway.door, ready.id), true).catch(() => undefined);
  await rm(ready.dir, { recursive: true, force: true }).catch(() => undefined);
  await ready.box.release();
}
