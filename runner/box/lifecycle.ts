import { PassThrough } from "node:stream";
import type Docker from "dockerode";
import { type BoxSpec, containerCreateOptions } from "./container-spec.ts";

/**
 * One box from start to removal: create, attach, start, wait for exit (or a
 * deadline, an abort, or a fault in something the box depends on), then
 * remove. Output is streamed as it comes. The first reason to end it wins.
 */
export type EndedBy = "exit" | "ceiling" | "signal" | "error";

export interface BoxOutcome {
  exitCode: number;
  endedBy: EndedBy;
  containerId: string;
}

export interface RunBoxOptions {
  onStdout?: (chunk: Buffer) => void;
  onStderr?: (chunk: Buffer) => void;
  /** Kill the box after this many milliseconds (the wall-clock ceiling). */
  deadlineMs?: number;
  /** Kill the box when aborted (Ctrl-C, SIGTERM). */
  signal?: AbortSignal;
  /**
   * Kill the box when aborted because the run can no longer be governed (its
   * gateway died): a box must never run on without its one door. Ends "error".
   */
  fault?: AbortSignal;
}

export async function runBox(
  docker: Docker,
  spec: BoxSpec,
  options: RunBoxOptions = {},
): Promise<BoxOutcome> {
  const container = await docker.createContainer(containerCreateOptions(spec));
  try {
    const stream = await container.attach({ stream: true, stdout: true, stderr: true });
    const stdout = new PassThrough();
    const stderr = new PassThrough();
    stdout.on("data", (chunk: Buffer) => options.onStdout?.(chunk));
    stderr.on("data", (chunk: Buffer) => options.onStderr?.(chunk));
    docker.modem.demuxStream(stream, stdout, stderr);
    const streamEnded = new Promise<void>((resolve) => {
      stream.on("end", resolve);
      stream.on("close", resolve);
    });

    let endedBy: EndedBy = "exit";
    const kill = async (reason: EndedBy) => {
      if (endedBy !== "exit") return;
      endedBy = reason;
      await container.kill().catch(() => undefined);
    };
    const timer =
      options.deadlineMs === undefined
        ? undefined
        : setTimeout(() => void kill("ceiling"), options.deadlineMs);
    const onAbort = () => void kill("signal");
    const onFault = () => void kill("error");
    options.signal?.addEventListener("abort", onAbort, { once: true });
    options.fault?.addEventListener("abort", onFault, { once: true });

    try {
      await container.start();
      // an abort that came while the container was being created finds it here
      if (options.signal?.aborted) await kill("signal");
      if (options.fault?.aborted) await kill("error");
      const result = (await container.wait()) as { StatusCode?: number };
      await Promise.race([streamEnded, new Promise((resolve) => setTimeout(resolve, 2000))]);
      return { exitCode: result.StatusCode ?? 1, endedBy, containerId: container.id };
    } finally {
      if (timer) clearTimeout(timer);
      options.signal?.removeEventListener("abort", onAbort);
      options.fault?.removeEventListener("abort", onFault);
    }
  } finally {
    await container.remove({ force: true }).catch(() => undefined);
  }
}
