import { stat } from "node:fs/promises";
import { join } from "node:path";
import { BOX_HOME, READY_WAITER, RUN_PI } from "../../boundary/box/layout.ts";
import type { BoxHandle } from "../../boundary/box/lifecycle.ts";
import type { RosterPaths } from "../../ground/config/paths.ts";
import type { ReadyStart } from "../runs/run-request.ts";
import { provision } from "../runs/start-1-provision.ts";
import {
  type BoxParts,
  type BoxStart,
  newBoxStart,
  prepareBox,
  readyStart,
  startPrepared,
  teardown,
} from "../runs/start-4-box.ts";
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

/**
 * The owner's last start step, with the box waiting in it: pi in RPC mode with
 * no prompt, or roster-ready for a command. Its output goes wherever the run
 * that takes it says (`output`, set at hand-off).
 */
function startPaused(
  start: BoxStart,
  parts: BoxParts,
  exec: boolean | undefined,
  output: ReadyBox["output"],
): Promise<BoxHandle> {
  const cmd = exec
    ? { cmd: [READY_WAITER] }
    : {
        cmd: [RUN_PI, "--mode", "rpc", "--session-dir", `${BOX_HOME}/session`],
        env: { ROSTER_HANDOFF: BOX_HANDOFF },
      };
  return startPrepared(
    start,
    parts,
    {
      ...cmd,
      interactive: true,
      // a one-shot run's pi exits when its task is done and stdin ends, as in json mode;
      // roster-ready runs its command when the command has been sent and stdin ends
      stdinOnce: true,
    },
    {
      // a command's box, as `box exec` starts it: asked whether the OOM killer ended it
      ...(exec ? { reportOom: true } : {}),
      onStdout: (chunk) => output.stdout?.(chunk),
      onStderr: (chunk) => output.stderr?.(chunk),
    },
  );
}

/**
 * The run owner's own start (runs/start-4-box.ts), paused before the run: the
 * box provisioned, its $HOME built, its token minted unbound, its door's
 * folder made, and the box started waiting; a failure gives all of it back.
 */
export async function makeReadyBox(options: {
  paths: RosterPaths;
  worker: string;
  channel?: string;
  /** For `box exec`: no model, no engine; roster-ready waits for the command. */
  exec?: boolean;
  note: (text: string) => void;
  env?: NodeJS.ProcessEnv;
}): Promise<ReadyBox> {
  const { paths, channel, exec } = options;
  const box = await provision({
    paths,
    worker: options.worker,
    note: options.note,
    // a command's box has no model, as a plain `box exec` has none
    model: !exec,
    ...(options.env ? { env: options.env } : {}),
  });
  const start = newBoxStart(paths, box);
  try {
    const key = await readyKey(paths.config, box.engine, box.image);
    const parts = await prepareBox(paths, start, { channel, ahead: true });
    // the folder the box mounts: one made again later is not the one it sees (hand-off.ts)
    const doorIno = (await stat(parts.door)).ino;
    const output: ReadyBox["output"] = {};
    const handle = await startPaused(start, parts, exec, output);
    let ended = false;
    void handle.done.then(() => {
      ended = true;
    });
    const { id, dir } = start;
    const ready: ReadyBox = {
      ended: () => ended,
      discard: () => discardReadyBox(paths, ready),
      doorIno,
      worker: box.worker.name,
      ...(channel ? { channel } : {}),
      ...(exec ? { exec: true } : {}),
      key,
      id,
      dir,
      home: parts.home,
      token: parts.token,
      box,
      handle,
      madeAt: Date.now(),
      output,
      handoffFile: join(dir, "self", "handoff.json"),
    };
    return ready;
  } catch (error) {
    await teardown(paths, start, { kill: "error", unrun: true });
    throw error;
  }
}

/**
 * Ends a ready box that will serve no run, by the run owner's own teardown:
 * the box killed and removed, its token and door gone, and the folder of the
 * run it never had removed.
 */
export function discardReadyBox(paths: RosterPaths, ready: ReadyBox): Promise<void> {
  return teardown(paths, readyStart(ready), { kill: "signal", unrun: true });
}
