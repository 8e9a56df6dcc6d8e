import { createWriteStream } from "node:fs";
import { chmod, mkdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { pipeline } from "node:stream/promises";
import { request } from "undici";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { errorMessage } from "../../ground/errors.ts";
import { channelDir } from "../../records/channels/store.ts";

/**
 * A chat attachment, saved under the channel's files/ (the worker reads it
 * at ~/channel/files/…) and mentioned to the worker by path. Each is capped:
 * a file over the cap is not saved, and the worker is told so, rather than
 * letting one upload fill the disk.
 */
export const ATTACHMENT_MAX_BYTES = 8 * 1024 * 1024;

export interface Attachment {
  id: string;
  filename: string;
  url: string;
  size: number;
}

function safeName(id: string, filename: string): string {
  const cleaned = filename
    .replace(/[^A-Za-z0-9._-]/g, "_")
    .replace(/^\.+/, "_")
    .slice(0, 100);
  return `${id.replace(/[^A-Za-z0-9]/g, "")}-${cleaned || "file"}`;
}

/** Saves it and returns the line that tells the worker where it is (or why it isn't). */
export async function saveAttachment(
  paths: RosterPaths,
  channel: string,
  attachment: Attachment,
  /** Sent with the download (some platforms' file links need the bot token). */
  headers: Record<string, string> = {},
): Promise<string> {
  const name = safeName(attachment.id, attachment.filename);
  if (attachment.size > ATTACHMENT_MAX_BYTES)
    return `[attachment ${attachment.filename}: ${attachment.size} bytes, over the ${ATTACHMENT_MAX_BYTES}-byte cap; not saved]`;
  const folder = join(channelDir(paths, channel), "files");
  const file = join(folder, name);
  try {
    await mkdir(folder, { recursive: true, mode: 0o755 });
    const response = await request(attachment.url, {
      headers,
      headersTimeout: 15_000,
      bodyTimeout: 30_000,
    });
    if (response.statusCode !== 200) {
      await response.body.dump();
      throw new Error(`HTTP ${response.statusCode}`);
    }
    let bytes = 0;
    response.body.on("data", (chunk: Buffer) => {
      bytes += chunk.length;
      if (bytes > ATTACHMENT_MAX_BYTES)
        response.body.destroy(new Error(`more than ${ATTACHMENT_MAX_BYTES} bytes`));
    });
    await pipeline(response.body, createWriteStream(file, { mode: 0o644 }));
    await chmod(file, 0o644);
    return `[attachment saved at ~/channel/files/${name} (${bytes} bytes)]`;
  } catch (error) {
    await rm(file, { force: true });
    return `[attachment ${attachment.filename} could not be saved: ${errorMessage(error)}]`;
  }
}
