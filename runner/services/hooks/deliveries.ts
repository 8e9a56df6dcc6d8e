import { existsSync, readFileSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { dirname, join } from "node:path";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { replaceFile } from "../../ground/files/atomic-replace.ts";

/**
 * The delivery ids a hook has filed, so a redelivery (a sender's retry, a
 * replay, the same delivery after the server restarted) is answered as a
 * duplicate and files nothing: data/hooks/<name>/deliveries.json, the newest
 * MAX_KEPT ids, rewritten whole (fsynced, renamed) after each filing. An id
 * is held while its delivery is being filed, so two copies arriving at once
 * file it once. An id is written after its task is: a crash between the two
 * files it twice on a redelivery, never loses it.
 */
export const MAX_KEPT = 4096;

interface Kept {
  id: string;
  at: string;
}

export class SeenDeliveries {
  private readonly kept: Kept[];
  private readonly ids: Set<string>;
  private readonly filing = new Set<string>();
  private writing: Promise<void> = Promise.resolve();

  constructor(
    private readonly file: string,
    private readonly max: number = MAX_KEPT,
  ) {
    this.kept = readKept(file).slice(-max);
    this.ids = new Set(this.kept.map((one) => one.id));
  }

  static forHook(paths: RosterPaths, hook: string): SeenDeliveries {
    return new SeenDeliveries(join(paths.data, "hooks", hook, "deliveries.json"));
  }

  /** Filed before, or being filed now. */
  has(id: string): boolean {
    return this.ids.has(id) || this.filing.has(id);
  }

  /** Holds the id while its delivery is filed; `release` when filing failed (a retry may file it). */
  hold(id: string): void {
    this.filing.add(id);
  }

  release(id: string): void {
    this.filing.delete(id);
  }

  /** The delivery was filed: its keys kept, the oldest beyond the bound forgotten, written before this resolves. */
  async remember(keys: readonly string[]): Promise<void> {
    const at = new Date().toISOString();
    for (const id of keys) {
      this.filing.delete(id);
      if (this.ids.has(id)) continue;
      this.kept.push({ id, at });
      this.ids.add(id);
    }
    for (const old of this.kept.splice(0, Math.max(0, this.kept.length - this.max)))
      this.ids.delete(old.id);
    const text = `${JSON.stringify({ deliveries: this.kept })}\n`;
    // one write at a time, in order: the last one written holds every id
    this.writing = this.writing
      .catch(() => undefined)
      .then(async () => {
        await mkdir(dirname(this.file), { recursive: true });
        await replaceFile(this.file, text, { mode: 0o600 });
      });
    await this.writing;
  }
}

function readKept(file: string): Kept[] {
  if (!existsSync(file)) return [];
  try {
    const parsed = JSON.parse(readFileSync(file, "utf8")) as { deliveries?: unknown };
    return Array.isArray(parsed.deliveries)
      ? parsed.deliveries.filter(
          (one): one is Kept =>
            typeof one === "object" && one !== null && typeof (one as Kept).id === "string",
        )
      : [];
  } catch {
    // an unreadable record remembers nothing rather than stopping the hook
    return [];
  }
}
