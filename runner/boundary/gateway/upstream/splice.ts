import type { Duplex } from "node:stream";

/**
 * Two sockets joined both ways (raw tunnels, WebSockets) until either side
 * ends. A FIN from one side is passed on to the other (what was already
 * written is flushed first); a close or an error on either side tears both
 * down, so no socket outlives its peer. An optional idle clock cuts a
 * connection that is silent both ways. Bytes are counted per direction for
 * the audit line.
 */
export interface SpliceEnd {
  toBox: number;
  toUpstream: number;
  /** Which side ended it first, and whether by an error. */
  endedBy: "box" | "upstream" | "idle";
  error: boolean;
}

/** How long a side that already closed waits for its last bytes to reach the other. */
const FLUSH_GRACE_MS = 2000;

export function spliceSockets(box: Duplex, upstream: Duplex, idleMs = 0): Promise<SpliceEnd> {
  return new Promise((resolve) => {
    let toBox = 0;
    let toUpstream = 0;
    let first: { endedBy: SpliceEnd["endedBy"]; error: boolean } | undefined;
    let settled = false;
    let timer: NodeJS.Timeout | undefined;
    const note = (endedBy: SpliceEnd["endedBy"], error: boolean) => {
      first ??= { endedBy, error };
    };
    const finish = () => {
      if (settled) return;
      settled = true;
      if (timer) clearTimeout(timer);
      box.destroy();
      upstream.destroy();
      resolve({ toBox, toUpstream, ...(first ?? { endedBy: "box", error: false }) });
    };
    if (idleMs > 0) {
      timer = setTimeout(() => {
        note("idle", false);
        finish();
      }, idleMs);
    }
    const join = (
      from: Duplex,
      to: Duplex,
      name: "box" | "upstream",
      count: (n: number) => void,
    ) => {
      from.on("data", (chunk: Buffer) => {
        count(chunk.length);
        timer?.refresh();
        if (!to.write(chunk)) from.pause();
      });
      to.on("drain", () => from.resume());
      from.once("end", () => {
        note(name, false);
        to.end();
      });
      // `on`, not `once`: a second error on a torn-down socket must not go unheard
      from.on("error", () => {
        note(name, true);
        finish();
      });
      from.once("close", () => {
        note(name, false);
        // let what `from` sent last reach `to`, briefly, then tear both down
        if (to.writableEnded && !to.writableFinished && !to.destroyed) {
          const grace = setTimeout(finish, FLUSH_GRACE_MS);
          to.once("finish", () => {
            clearTimeout(grace);
            finish();
          });
          to.once("close", finish);
        } else {
          finish();
        }
      });
    };
    join(upstream, box, "upstream", (n) => {
      toBox += n;
    });
    join(box, upstream, "box", (n) => {
      toUpstream += n;
    });
  });
}
