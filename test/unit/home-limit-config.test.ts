import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { formatConfigError, loadConfig } from "../../runner/ground/config/load.ts";
import { workerView } from "../../runner/ground/config/worker-view.ts";

/**
 * `[store] home_max_size` narrows like `max_size`: unset, it is the store's
 * own size (so a small store means a small $HOME); a worker may only lower
 * it; `scratch_keep` is org.toml's alone and must read as an age.
 */
const roots: string[] = [];
afterEach(async () => {
  for (const root of roots.splice(0)) await rm(root, { recursive: true, force: true });
});

async function load(files: Record<string, string>) {
  const root = await mkdtemp(join(tmpdir(), "roster-home-limit-"));
  roots.push(root);
  for (const [path, text] of Object.entries(files)) {
    await mkdir(join(root, path, ".."), { recursive: true });
    await writeFile(join(root, path), text);
  }
  const config = loadConfig(root);
  const errors = config.errors.map(formatConfigError).map((line) => line.replace(`${root}/`, ""));
  return { config, errors };
}

const MB = 1024 * 1024;

describe("[store] home_max_size and scratch_keep", () => {
  it("unset, a $HOME may hold what the store may; a worker's own is narrower only", async () => {
    const { config, errors } = await load({
      "org.toml": '[store]\nmax_size = "500m"\n',
      "workers/elf/worker.toml": 'name = "elf"\n',
      "workers/imp/worker.toml": 'name = "imp"\n\n[store]\nmax_size = "20m"\n',
      "workers/bob/worker.toml": 'name = "bob"\n\n[store]\nhome_max_size = "1g"\n',
    });
    expect(errors).toEqual([
      'workers/bob/worker.toml:4: store.home_max_size: "1g" is more than org.toml allows ("500m"); a worker\'s config may only narrow the org\'s',
    ]);
    expect(workerView(config, "elf")?.store.homeMaxBytes).toBe(500 * MB);
    expect(workerView(config, "imp")?.store.homeMaxBytes).toBe(20 * MB);
    // without any [store], the default: 10g
    const bare = await load({ "workers/elf/worker.toml": 'name = "elf"\n' });
    expect(workerView(bare.config, "elf")?.store.homeMaxBytes).toBe(10 * 1024 * MB);
  });

  it("scratch_keep is an age in org.toml and nowhere else", async () => {
    const { errors } = await load({
      "org.toml": '[store]\nscratch_keep = "3 days"\n',
      "workers/elf/worker.toml": 'name = "elf"\n\n[store]\nscratch_keep = "1d"\n',
    });
    expect(errors.join("\n")).toMatch(
      /^org\.toml:2: store\.scratch_keep: an age like "3d", "12h" or "90m" \(found "3 days"\)$/m,
    );
    expect(errors.join("\n")).toMatch(/workers\/elf\/worker\.toml:4: store\.scratch_keep/);
  });
});
