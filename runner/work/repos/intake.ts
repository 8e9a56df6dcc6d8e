import { constants, createWriteStream } from "node:fs";
import { open, readlink, realpath } from "node:fs/promises";
import { pipeline } from "node:stream/promises";

/**
 * Takes a file a box wrote (a push's bundle) into a host-owned copy, without
 * trusting the path it sits at: the box may have swapped any folder on the way
 * for a symlink to somewhere else on the host, or left a FIFO that never
 * ends. So the file is opened without following a final symlink and without
 * blocking, must be a regular file, and the place the kernel actually opened
 * (/proc/self/fd) must lie inside the folder it was meant to be in. The copy
 * stops at `maxBytes`.
 */
export class IntakeError extends Error {}

export async function takeBoxFile(options: {
  file: string;
  /** The folder the file must really be in (host-made, not writable by the box itself). */
  within: string;
  maxBytes: number;
  dest: string;
}): Promise<number> {
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    handle = await open(
      options.file,
      constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK,
    );
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT") throw new IntakeError("no bundle was found where the push leaves it");
    if (code === "ELOOP") throw new IntakeError("the bundle is a symlink");
    throw new IntakeError(`the bundle can't be read (${code ?? "error"})`);
  }
  try {
    const stat = await handle.stat();
    if (!stat.isFile()) throw new IntakeError("the bundle is not a regular file");
    const root = await realpath(options.within);
    const opened = await readlink(`/proc/self/fd/${handle.fd}`);
    if (!opened.startsWith(`${root}/`))
      throw new IntakeError("the bundle lies outside the run's clone (a symlinked folder?)");
    if (stat.size > options.maxBytes)
      throw new IntakeError(
        `the bundle is ${stat.size} bytes, over the limit of ${options.maxBytes}`,
      );
    let copied = 0;
    await pipeline(
      handle.createReadStream({ start: 0, autoClose: false }),
      async function* (source: AsyncIterable<Buffer>) {
        for await (const chunk of source) {
          copied += chunk.length;
          if (copied > options.maxBytes)
            throw new IntakeError(`the bundle grew past the limit of ${options.maxBytes} bytes`);
          yield chunk;
        }
      },
      createWriteStream(options.dest, { mode: 0o600 }),
    );
    return copied;
  } finally {
    await handle.close();
  }
}
